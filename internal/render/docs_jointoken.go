package render

import (
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// JoinTokenFirstRunCommand is the command that creates the first join
// token of a new cluster, before any VM boots: the renewer's CronJob run
// once, now.
func JoinTokenFirstRunCommand() string {
	return "kubectl -n " + JoinTokenRenewerNamespace + " create job --from=cronjob/" + JoinTokenRenewerName + " " + JoinTokenRenewerName + "-first"
}

// joinToken writes how the VMs' join token is kept valid.
func (d *docWriter) joinToken() {
	c := &d.src.Cluster
	d.p("\n## Join token\n\n")
	if !RendersJoinTokenRenewer(d.src) {
		d.p("VMs read the kubeadm bootstrap token from project metadata key `%s`. nodegen does not renew it: replace it before it expires (`kubeadm token create` gives 24h by default), or every VM created after that fails to join. Use `cluster.joinToken.secretManager` to have it renewed.\n",
			c.JoinToken.MetadataKey)
		return
	}
	sm := c.JoinToken.SecretManager
	r, err := d.src.Renewal()
	if err != nil {
		return // Docs runs after JoinTokenRenewer, which reported it
	}
	d.p("VMs read the kubeadm bootstrap token at boot from Secret Manager secret `projects/%s/secrets/%s` (latest version). The CronJob `%s/%s` (`%s`, on node group `%s`) creates a token valid for %s every %s and adds it as a new version; tokens superseded for more than %s (the longest provisioning time, %s, plus %s) are deleted and their versions disabled.\n",
		c.GCP.Project, sm.Secret, JoinTokenRenewerNamespace, JoinTokenRenewerName, layout.JoinTokenRenewerPath, c.Autoscaler.NodeGroup,
		model.FormatDuration(r.TTL), model.FormatDuration(r.Period), model.FormatDuration(r.Grace()),
		model.FormatDuration(r.Provision), model.FormatDuration(model.JoinTokenMargin))
	d.p("\nOnce, after `kubectl apply -f out/%s%s` and before the first VM boots, create the first token:\n\n```sh\n%s\n```\n",
		d.src.Tree, layout.JoinTokenRenewerPath, JoinTokenFirstRunCommand())
}
