package docs

import (
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// joinTokenFirstRunCommand is the command that runs the renewer's CronJob
// once, now: on day 0, once the autoscaler's node has joined with the
// first token (docs/day0.md), so that the renewer takes over at once.
func joinTokenFirstRunCommand() string {
	return "kubectl -n " + model.WorkloadNamespace + " create job --from=cronjob/" + model.JoinTokenRenewer.Name() + " " + model.JoinTokenRenewer.Name() + "-first"
}

// joinToken writes how the VMs' join token is kept valid.
func (d *docWriter) joinToken() {
	c := &d.src.Cluster
	d.p("\n## Join token\n\n")
	if !d.src.Cluster.HasJoinTokenRenewer() {
		d.p("VMs read the kubeadm bootstrap token from project metadata key `%s`. nodegen does not renew it: replace it before it expires (`kubeadm token create` gives 24h by default), or every VM created after that fails to join; make it in the cloud join group, `kubeadm token create --groups %s` (day 0's first token step shows the command), never in kubeadm's default group, whose CSRs the control plane approves for any node name: every VM of the project can read project metadata. The node CSR approver decides the cloud nodes' CSRs. Use `cluster.joinToken.secretManager` to have it renewed.\n",
			c.JoinToken.MetadataKey, model.CloudBootstrapGroup)
		return
	}
	sm := c.JoinToken.SecretManager
	r := d.src.Renewal()
	d.p("VMs read the kubeadm bootstrap token at boot from Secret Manager secret `projects/%s/secrets/%s` (latest version). The CronJob `%s/%s` (`%s`, on node group `%s`) creates a token valid for %s every %s and adds it as a new version; tokens superseded for more than %s (the longest provisioning time, %s, plus %s) are deleted and their versions disabled.\n",
		c.GCP.Project, sm.Secret, model.WorkloadNamespace, model.JoinTokenRenewer.Name(), layout.JoinTokenRenewerPath, c.Autoscaler.NodeGroup,
		model.FormatDuration(r.TTL), model.FormatDuration(r.Period), model.FormatDuration(r.Grace()),
		model.FormatDuration(r.Provision), model.FormatDuration(model.JoinTokenMargin))
	d.p("\nThe renewer runs on the autoscaler's node, so it cannot make the token that node joins with: the first token comes from `kubeadm` on a control-plane node, added with `gcloud`, right after `terraform apply` (`out/%s%s`, \"Make the first join token\"); the renewer's first run then takes over. The same command is the way back when renewal has lapsed and the autoscaler's node is lost.\n",
		d.src.Tree, layout.Day0DocsPath)
}
