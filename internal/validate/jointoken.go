package validate

import (
	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
)

// joinToken checks the renewal of a Secret Manager join token: the period
// must map onto a cron schedule, the TTL must outlast a renewal period plus
// the longest provisioning time plus the margin, and the VMs must read the
// latest version (a pinned version is never renewed).
func (c *checker) joinToken() {
	jt := c.src.Cluster.JoinToken
	if jt.SecretManager == nil {
		c.noRenewal()
		return
	}
	if v := jt.SecretManager.Version; v != "latest" {
		c.at(sel("cluster", "joinToken", "secretManager", "version"),
			"the renewer adds a new version every %s and deletes superseded tokens, so VMs reading version %s would get a deleted token; remove the field to read \"latest\"", jt.RenewEvery, v)
	}
	if len(c.broken.Groups) > 0 {
		return // the provisioning times are not all known
	}
	r := c.src.Renewal()
	if _, err := model.CronSchedule(r.Period); err != nil {
		c.at(sel("cluster", "joinToken", "renewEvery"),
			"renewEvery %s: %v; the renewer runs as a CronJob: use a divisor of an hour (e.g. \"10m\", \"15m\", \"30m\") or of a day (e.g. \"1h\", \"6h\", \"12h\", \"24h\")", jt.RenewEvery, err)
		return
	}
	if r.TTL < r.MinTTL() {
		from := "cluster.autoscaler.maxNodeProvisionTime"
		if g := c.src.NodeGroups[r.ProvisionGroup]; g != nil && !g.Autoscaling.MaxNodeProvisionTime.IsZero() {
			from = "node group " + r.ProvisionGroup + "'s maxNodeProvisionTime"
		}
		c.at(sel("cluster", "joinToken", "ttl"),
			"ttl %s is shorter than renewEvery %s + the longest provisioning time %s (%s) + %s margin = %s: a VM that reads the token just before a renewal could find it expired before it joins; set ttl: %q or more, or renew more often",
			model.FormatDuration(r.TTL), model.FormatDuration(r.Period), model.FormatDuration(r.Provision), from, model.FormatDuration(model.JoinTokenMargin),
			model.FormatDuration(r.MinTTL()), model.FormatDuration(r.MinTTL()))
	}
}

// noRenewal refuses the renewal settings where nothing renews: with a
// token in project metadata, the renewer is not rendered, so renewEvery
// and ttl would be read by nothing.
func (c *checker) noRenewal() {
	base := sel("cluster", "joinToken")
	for _, f := range []string{"renewEvery", "ttl"} {
		if p := join(base, f); c.pos.Pos(p...) != c.pos.Pos(base...) {
			c.at(p, "%s has no effect with metadataKey: nodegen renews only a token kept in Secret Manager (the renewer is not rendered for a metadata key); remove it, or use secretManager to have the token renewed", f)
		}
	}
}

// Warnings returns what is valid but risky in a valid source: findings
// that vet and gen print without failing.
func Warnings(src *model.Source, pos Positioner) diag.List {
	c := &checker{src: src, pos: pos}
	if jt := src.Cluster.JoinToken; jt.SecretManager == nil && jt.MetadataKey != "" {
		c.at(sel("cluster", "joinToken", "metadataKey"),
			"warning: nodegen does not renew a token kept in project metadata: replace the value before the token expires (kubeadm token create gives 24h by default), or every VM created after that fails to join; use secretManager to have it renewed")
	}
	c.capacityWarnings()
	c.onpremHostDriverWarnings()
	c.autoscalerRelease(true)
	c.kubernetesReleaseWarnings()
	return c.list.Sorted()
}
