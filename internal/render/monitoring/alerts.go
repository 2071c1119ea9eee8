package monitoring

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nodegen/nodegen/internal/model"
)

// The metrics the rules read, with their sources.
//
// The Cluster Autoscaler's (kubernetes/autoscaler tag
// cluster-autoscaler-1.35.2, cluster-autoscaler/metrics/metrics.go; all
// under the namespace cluster_autoscaler_):
//   - unschedulable_pods_count{type="unschedulable"}: the pods the loop
//     found unschedulable (core/static_autoscaler.go, every loop);
//   - last_activity{activity="scaleUp"}: when the leader last tried a
//     scale-up, which it does in each loop that leaves pods no node,
//     upcoming ones included, takes (core/static_autoscaler.go, preScaleUp);
//   - scaled_up_nodes_total: nodes added (core/scaleup/orchestrator/executor.go);
//     a scale-up that fails in the orchestrator adds nothing here and
//     nothing to errors_total (postScaleUp logs it; RunOnce returns nil);
//   - failed_scale_ups_total{reason}: scale-ups the cloud refused or that
//     timed out;
//   - skipped_scale_events_count{direction="up",reason}: node groups
//     skipped for the CPU or memory cap (orchestrator.go, the quotas
//     tracker's CheckDelta);
//   - nodes_count{state}: the nodes by state; cluster_cpu_current_cores and
//     cluster_memory_current_bytes: the totals the caps are checked
//     against (core/static_autoscaler.go, every node);
//   - node_group_target_count, node_group_healthiness,
//     node_group_backoff_status{node_group,reason}: per MIG, only with
//     --emit-per-nodegroup-metrics; node_group is the MIG's URL
//     (processors/status/metrics_autoscaling_status_processor.go,
//     clusterstate/clusterstate.go); backoff_status is 0 with reason ""
//     for a MIG not backed off;
//   - last_activity{activity="main"}: the start of the leader's last loop
//     (loop/run.go); a replica that does not lead runs no loop and has
//     no such series (main.go: the loop runs in OnStartedLeading).
//
// kube-state-metrics v2 (kubernetes/kube-state-metrics, docs/metrics/):
//   - kube_node_spec_taint{node,key,value,effect}, kube_node_created{node},
//     kube_node_info{node,provider_id,...}, kube_node_status_allocatable{node,resource,unit}
//     (cluster/node-metrics.md; extended resources with '.' and '/' as '_');
//   - kube_certificatesigningrequest_created and
//     kube_certificatesigningrequest_condition{certificatesigningrequest,signer_name,condition}
//     (auth/certificatesigningrequest-metrics.md; one series each for
//     "approved" and "denied", 0 while pending: internal/store/certificatesigningrequest.go);
//   - kube_cronjob_status_last_successful_time{namespace,cronjob} (absent
//     until a Job of the CronJob succeeded) and kube_cronjob_created
//     (workload/cronjob-metrics.md).

// autoscalerJob selects the autoscaler's metrics: the ServiceMonitor's
// job is the Service's name.
var autoscalerJob = `job=` + q(model.AutoscalerFullname)

func ca(metric string, matchers ...string) string {
	return "cluster_autoscaler_" + metric + "{" + strings.Join(append([]string{autoscalerJob}, matchers...), ",") + "}"
}

func regexpQuote(s string) string { return regexp.QuoteMeta(s) }

// migMatcher matches the MIGs of group g by the node_group label.
func migMatcher(src *model.Source, g *model.NodeGroup) string {
	var urls []string
	for _, m := range src.GroupMIGs(g) {
		urls = append(urls, m.URL)
	}
	return "node_group=~" + q(anyOf(urls))
}

func autoscalerAlerts(src *model.Source) ([]alert, error) {
	pending := "max(" + ca("unschedulable_pods_count", `type="unschedulable"`) + ") > 0"
	caps, hasCaps := src.Caps()
	capped := "sum(increase(" + ca("skipped_scale_events_count", `direction="up"`) + "[10m])) > 0"
	if hasCaps && caps.MaxNodes > 0 {
		capped = "(" + capped + ") or (sum(" + ca("nodes_count") + ") >= " + strconv.FormatInt(caps.MaxNodes, 10) + ")"
	}
	var atMax []string
	for _, g := range src.Groups() {
		if g.Autoscaled() {
			atMax = append(atMax, "("+ca("node_group_target_count", migMatcher(src, g))+" >= "+strconv.Itoa(g.Max)+")")
		}
	}
	out := []alert{
		{
			name:     "NodegenAutoscalerDown",
			expr:     "absent(up{" + autoscalerJob + "} == 1)",
			forDur:   5 * time.Minute,
			severity: "critical",
			summary:  "No Cluster Autoscaler replica is scraped up.",
			desc:     "No replica of the Cluster Autoscaler in namespace " + src.Cluster.Autoscaler.Namespace + " has answered a scrape for 5 minutes: no node group scales up or down.",
		},
		{
			name:     "NodegenAutoscalerNotLeading",
			expr:     "(sum(up{" + autoscalerJob + "} == 1) > 0) unless on() (time() - max(" + ca("last_activity", `activity="main"`) + ") < " + seconds(loopStale) + ")",
			forDur:   5 * time.Minute,
			severity: "critical",
			summary:  "The Cluster Autoscaler runs but no replica leads and loops.",
			desc:     "A replica answers scrapes, but none has started a loop in the last " + model.FormatDuration(loopStale) + ": none holds the leader lease, or the leader's loop hangs.",
		},
		{
			name:     "NodegenScaleUpFailed",
			expr:     "sum by (reason) (increase(" + ca("failed_scale_ups_total") + "[10m])) > 0",
			severity: "warning",
			summary:  "A scale-up failed ({{ $labels.reason }}).",
			desc:     "The cloud refused a scale-up or it timed out in the last 10 minutes; the MIG is backed off.",
		},
		{
			name: "NodegenPendingWithoutScaleUp",
			// The autoscaler tries a scale-up (and sets
			// last_activity{activity="scaleUp"}) in every loop that leaves
			// pods no node takes, upcoming nodes included: after a healthy
			// scale-up the pods wait for their upcoming node and it tries
			// none (core/static_autoscaler.go, RunOnce: PodListProcessor,
			// then preScaleUp before ScaleUp, at cluster-autoscaler-1.35.2).
			// So pods pending while it keeps trying and adds nothing is
			// the silent failure, however long after another scale-up
			// (the upcoming-node freeze follows the autoscaler's own).
			expr: "(" + pending + ") and on() (time() - max(" + ca("last_activity", `activity="scaleUp"`) + ") < " + seconds(scaleUpTried) + ")" +
				" unless on() (sum(increase(" + ca("scaled_up_nodes_total") + "[" + string(promDuration(scaleUpTried)) + "])) > 0) unless on() (" + capped + ")" + unlessAtMax(atMax),
			forDur:   5 * time.Minute,
			severity: "critical",
			summary:  "Pods are unschedulable and the autoscaler keeps trying to scale up but adds no node, with no cap or group maximum reached.",
			desc:     fmt.Sprintf("For 5 minutes pods have been unschedulable while the autoscaler kept trying to scale up (a try in the last %[1]s: pods remain that no node, upcoming ones included, takes) and added no node (none in the last %[1]s), and neither a cluster cap nor a group's max explains it: the silent scale-up failure (a node without providerID, the upcoming-node freeze), or pods no group fits.", model.FormatDuration(scaleUpTried)),
		},
		{
			name:     "NodegenPendingCapped",
			expr:     "(" + pending + ") and on() (" + capped + ")",
			forDur:   5 * time.Minute,
			severity: "warning",
			summary:  "Pods are unschedulable and a cluster-wide cap stops the scale-up.",
			desc:     "The autoscaler skipped node groups for the CPU or memory cap, or the cluster has as many nodes as --max-nodes-total allows.",
		},
	}
	for _, g := range src.Groups() {
		if !g.Autoscaled() {
			continue
		}
		m := migMatcher(src, g)
		gl := map[string]string{"nodegen_group": g.Name}
		out = append(out,
			alert{
				name:     "NodegenPendingGroupAtMax",
				expr:     "(" + ca("node_group_target_count", m) + " >= " + strconv.Itoa(g.Max) + ") and on() (" + pending + ")",
				forDur:   5 * time.Minute,
				severity: "warning",
				labels:   gl,
				summary:  fmt.Sprintf("Pods are unschedulable and a MIG of group %s is at its max (%d).", g.Name, g.Max),
				desc:     "{{ $labels.node_group }} has reached the group's max while pods are unschedulable.",
			},
			alert{
				name:     "NodegenMIGBackedOff",
				expr:     "max by (node_group, reason) (" + ca("node_group_backoff_status", m, `reason!=""`) + ") == 1",
				forDur:   time.Minute,
				severity: "warning",
				labels:   gl,
				summary:  fmt.Sprintf("A MIG of group %s is backed off ({{ $labels.reason }}).", g.Name),
				desc:     "The autoscaler does not scale {{ $labels.node_group }} up until its backoff ends.",
			},
			alert{
				name:     "NodegenMIGUnhealthy",
				expr:     "min by (node_group) (" + ca("node_group_healthiness", m) + ") == 0",
				forDur:   5 * time.Minute,
				severity: "warning",
				labels:   gl,
				summary:  fmt.Sprintf("A MIG of group %s is unhealthy.", g.Name),
				desc:     "The autoscaler counts too many unready or unregistered nodes in {{ $labels.node_group }} and does not scale it up.",
			},
		)
	}
	return append(out, capAlerts(src)...), nil
}

func unlessAtMax(atMax []string) string {
	if len(atMax) == 0 {
		return ""
	}
	return " unless on() (" + strings.Join(atMax, " or ") + ")"
}

// capAlerts are the caps nearly reached, one rule per cap the source sets,
// in the effective numbers flags.txt gives the autoscaler.
func capAlerts(src *model.Source) []alert {
	caps, ok := src.Caps()
	if !ok {
		return nil
	}
	nearly := func(kind, expr string, limit int64, unit string) alert {
		return alert{
			name:     "NodegenCapNearlyReached",
			expr:     expr + " > " + strconv.FormatFloat(nearlyFraction*float64(limit), 'f', -1, 64),
			forDur:   10 * time.Minute,
			severity: "warning",
			labels:   map[string]string{"cap": kind},
			summary:  fmt.Sprintf("The cluster uses over %d%% of its %s cap (%d%s).", int(nearlyFraction*100), kind, limit, unit),
			desc:     "The autoscaler's cluster-wide cap counts every node, the ones outside the MIGs too; at the cap it skips every group.",
		}
	}
	var out []alert
	if caps.MaxNodes > 0 {
		out = append(out, nearly("nodes", "sum("+ca("nodes_count")+")", caps.MaxNodes, " nodes"))
	}
	if caps.Cores {
		out = append(out, nearly("cores", "max("+ca("cluster_cpu_current_cores")+")", caps.CoresMax, " vCPUs"))
	}
	if caps.Memory {
		a := nearly("memory", "max("+ca("cluster_memory_current_bytes")+") / 1073741824", caps.MemoryGiBMax, " GiB")
		out = append(out, a)
	}
	for _, t := range model.SortedKeys(caps.GPUsMax) {
		nodes := gpuNodes(src, t)
		if nodes == "" {
			continue
		}
		expr := "sum(max by (node) (kube_node_status_allocatable{resource=\"nvidia_com_gpu\",node=~" + q(nodes) + "}))"
		out = append(out, nearly("gpus "+t, expr, caps.GPUsMax[t], " "+t))
	}
	return out
}

// gpuNodes matches the Nodes whose GPUs of type t the autoscaler's GPU
// cap counts: the cloud groups' of that type and the declared nodes
// outside the MIGs with that type.
func gpuNodes(src *model.Source, t string) string {
	var parts []string
	for _, g := range src.CloudGroups() {
		if g.GPU != nil && g.GPU.Type == t {
			parts = append(parts, src.Cluster.InstanceNamePattern(g))
		}
	}
	for _, n := range src.DeclaredNodes() {
		if n.GPUType == t && n.GPUs > 0 {
			parts = append(parts, regexpQuote(n.Name))
		}
	}
	return strings.Join(parts, "|")
}

// joinBudget is the longest join deadline of the cloud groups: a kubelet
// CSR pending longer belongs to a join that has failed.
func joinBudget(src *model.Source) (time.Duration, error) {
	var longest time.Duration
	for _, g := range src.CloudGroups() {
		d, err := src.Cluster.JoinDeadline(g)
		if err != nil {
			return 0, fmt.Errorf("node group %s: %w", g.Name, err)
		}
		longest = max(longest, d)
	}
	return longest, nil
}

// cronJobStale fires when the CronJob's last success is older than after,
// or when it has had none and exists for longer than after.
func cronJobStale(w model.Workload, after time.Duration) string {
	sel := "{namespace=" + q(w.Namespace()) + ",cronjob=" + q(w.Name()) + "}"
	return "((time() - max(kube_cronjob_status_last_successful_time" + sel + ")) > " + seconds(after) + ")" +
		" or (absent(kube_cronjob_status_last_successful_time" + sel + ") and on() ((time() - max(kube_cronjob_created" + sel + ")) > " + seconds(after) + "))"
}

func nodeAlerts(src *model.Source) ([]alert, error) {
	var out []alert
	// The startup time is the autoscaler's, one for every group: the
	// Startup of each group's init budget.
	startup, _ := src.MaxNodeStartupTime()
	for _, g := range src.CloudGroups() {
		if g.StartupTaint == nil {
			continue
		}
		nodes := "node=~" + q(src.Cluster.InstanceNamePattern(g))
		out = append(out, alert{
			name: "NodegenStartupTaintStuck",
			expr: "((time() - max by (node) (kube_node_created{" + nodes + "})) > " + seconds(startup) + ")" +
				" and on(node) max by (node) (kube_node_spec_taint{" + nodes + ",key=" + q(g.StartupTaint.Key) + "})",
			forDur:   time.Minute,
			severity: "warning",
			labels:   map[string]string{"nodegen_group": g.Name},
			summary:  fmt.Sprintf("Node {{ $labels.node }} of group %s still has its startup taint %s.", g.Name, model.FormatDuration(startup)+" after it registered"),
			desc:     fmt.Sprintf("The startup taint %s stays until the GPU Operator validated the node; past the autoscaler's max-node-startup-time (%s) the node counts as unready, and with the stock build every other scale-up waits meanwhile.", g.StartupTaint.Key, model.FormatDuration(startup)),
		})
	}
	budget, err := joinBudget(src)
	if err != nil {
		return nil, err
	}
	if budget > 0 {
		signer := "signer_name=" + q(model.KubeletClientSigner)
		out = append(out, alert{
			name: "NodegenKubeletCSRPending",
			expr: "((time() - max by (certificatesigningrequest) (kube_certificatesigningrequest_created{" + signer + "})) > " + seconds(budget) + ")" +
				" and on(certificatesigningrequest) (sum by (certificatesigningrequest) (kube_certificatesigningrequest_condition{" + signer + "}) == 0)",
			forDur:   time.Minute,
			severity: "critical",
			summary:  "Kubelet client CSR {{ $labels.certificatesigningrequest }} has been pending longer than a join may take.",
			desc:     fmt.Sprintf("Neither approved nor denied after %s (the longest join deadline of the cloud groups): the node CSR approver %s/%s is down or cannot decide, and no cloud node can join.", model.FormatDuration(budget), model.NodeCSRApprover.Namespace(), model.NodeCSRApprover.Name()),
		})
	}
	if src.Cluster.HasJoinTokenRenewer() {
		r := src.Renewal()
		after := r.Period + model.JoinTokenMargin
		out = append(out, alert{
			name:     "NodegenJoinTokenRenewerStale",
			expr:     cronJobStale(model.JoinTokenRenewer, after),
			forDur:   time.Minute,
			severity: "critical",
			summary:  "The join-token renewer has not succeeded for " + model.FormatDuration(after) + ".",
			desc:     fmt.Sprintf("CronJob %s/%s renews the join token every %s; once the token in Secret Manager expires (ttl %s), no cloud VM can join.", model.JoinTokenRenewer.Namespace(), model.JoinTokenRenewer.Name(), model.FormatDuration(r.Period), model.FormatDuration(r.TTL)),
		})
	}
	grace := src.Cluster.NodeLifecycle.NotReadyGracePeriod.Duration()
	out = append(out, alert{
		name:     "NodegenNodeCollectorStale",
		expr:     cronJobStale(model.NodeCollector, grace),
		forDur:   time.Minute,
		severity: "warning",
		summary:  "The node garbage collector has not succeeded for " + model.FormatDuration(grace) + ".",
		desc:     fmt.Sprintf("CronJob %s/%s runs every minute; without it the Nodes of deleted VMs linger and a VM recreated under the same name registers without its taints.", model.NodeCollector.Namespace(), model.NodeCollector.Name()),
	})
	if src.Cluster.Autoscaler.PatchedImage == nil {
		out = append(out, alert{
			name:     "NodegenNodeWithoutProviderID",
			expr:     `max by (node) (kube_node_info{provider_id=""})`,
			forDur:   5 * time.Minute,
			severity: "critical",
			summary:  "Node {{ $labels.node }} has no providerID.",
			desc:     "The stock Cluster Autoscaler's GCE provider fails on a node without providerID: no node group scales up or down while it exists.",
		})
	}
	return out, nil
}
