package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/oauth2/google"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/drift"
	"github.com/nodegen/nodegen/internal/kube"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/rollout"
)

const rolloutDoc = `rollout brings every cloud group's nodes to the group's current revision:
the nodegen.dev/revision label each cloud node joins with, a digest of
what gen renders for the group (kube-env, startup script with its
JoinConfiguration and kubelet patch, image, machine, Kubernetes version).

Without --yes it only prints the plan (--dry-run says so explicitly): the
groups in order (autoscaled groups, then gce-static ones, the autoscaler's
own group last), what replacing their stale nodes changes, each stale node
and its replacement, batch by batch. Nodes come from --nodes FILE (kubectl
get nodes -o json) or live from --kubeconfig FILE; without either, from the
kubeconfig files $KUBECONFIG names, merged as kubectl merges them (a list
separated by ":"), or without $KUBECONFIG from ~/.kube/config, as kubectl
reads it, with their current context. A node's kubelet may set its own
revision label: from the live cluster, the plan takes each node's revision
from the template Compute made its instance from (listManagedInstances),
with the credentials and endpoint --yes uses; without them, or for a MIG
that cannot be read, it says so on stderr and takes the labels'.

With --yes (and the live cluster) it carries the plan out, per zonal MIG, a
batch of cluster.rollout.surge stale nodes at a time: it creates their
replacement VMs through the MIG (createInstances), waits until they are
Ready, verified by the node CSR approver (its group label) and rid of
their startup taint, cordons each old node, drains it
through the Eviction API (PodDisruptionBudgets respected, no pod deleted
unless cluster.rollout.onDrainTimeout is "force"),
deletes it through the MIG (deleteInstances) and deletes its Node. First it
checks that the MIG's instance template declares the current revision
(terraform apply ran). It can be stopped at any time (Ctrl-C, or killed)
and run again: it resumes from what the cluster and the MIGs show. A drain
that a PodDisruptionBudget blocks for cluster.rollout.drainTimeout stops it
with the node schedulable again and nothing deleted (onDrainTimeout "stop",
the default), or deletes the pods still refused (onDrainTimeout "force").

One rollout at a time: --yes first takes a lock held in the cluster, the
Lease kube-system/nodegen-rollout, and renews it while it runs. Another run
that holds it makes --yes refuse before changing anything, naming the
holder (host, pid, start) and when the lock expires; --wait DURATION waits
for it instead. A run that crashed or was killed renews it no more: it
expires 15s after its last renewal, and the next run takes it over. A run
that cannot renew it for 10s stops where it is.

Before any group, it drains, one at a time and as above, the nodes of MIGs
the source no longer has (a zone removed from a group, a group removed or
renamed), deletes them through their MIG, then deletes the emptied MIG,
and any MIG of the cluster that left the source with no instance:
terraform apply refuses to delete a MIG (its deletion_policy is PREVENT),
so run this before terraform apply, and after the autoscaler's helm
upgrade (the plan prints the command): it reads the running autoscaler's
Deployment (cluster-autoscaler, in cluster.autoscaler.namespace) and
refuses to drain or delete a MIG while its arguments still name it, or
while its new arguments do not yet run on every replica. A MIG that a run
stopped after asking for its deletion, and that Compute is still
deleting, is waited for (up to 2m).

A batch never takes an autoscaled MIG past its group's max: its surge is
what the MIG's target size leaves room for, and should the autoscaler
scale the MIG up while the replacements are created, the replacements
past the max are removed again before any old node is cordoned.

As kubectl drain, a drain leaves DaemonSet and mirror pods, and does not
evict pods that declare no controller (--force does), pods with emptyDir
volumes (--delete-emptydir-data does), or pods annotated
cluster-autoscaler.kubernetes.io/safe-to-evict: "false" or
karpenter.sh/do-not-disrupt: "true" (--evict-do-not-disrupt does). As the
Cluster Autoscaler's scale-down, it does not evict pods with data on the
VM's disks, which are deleted with it: a hostPath volume, or a claim bound
to a local (or hostPath) PersistentVolume (--delete-local-volume-data
does; a volume the pod names in cluster-autoscaler.kubernetes.io/
safe-to-evict-local-volumes does not hold it). The plan lists them, and a
node that holds one is not replaced. The plan names the Job pods a drain
evicts, and says that each replaced node's disks go with its VM.

The Compute API is called with Application Default Credentials
(GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, or
the metadata server).

Exit 0 when done (or for a plan), 1 when the rollout stopped or failed, 2 on
a usage mistake.`

// rolloutFlags are rollout's flags.
type rolloutFlags struct {
	src        ioFlags
	nodesFile  string
	kubeconfig string
	output     string
	dryRun     bool
	yes        bool
	endpoint   string
	poll       time.Duration
	wait       time.Duration
	drain      rollout.DrainOptions
}

func rolloutCommand(s *streams) *cli.Command {
	f := &rolloutFlags{}
	return &cli.Command{
		Name:        "rollout",
		Usage:       "replace the cloud nodes made from an older source (a plan, unless --yes)",
		Description: rolloutDoc,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "nodes", Usage: "plan from `FILE` holding kubectl get nodes -o json output (- for stdin)", Destination: &f.nodesFile},
			&cli.StringFlag{Name: "kubeconfig", Usage: "the cluster of this kubeconfig `FILE` (default: $KUBECONFIG, else ~/.kube/config, as kubectl reads them)", Destination: &f.kubeconfig},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan only (the default without --yes)", Destination: &f.dryRun},
			&cli.BoolFlag{Name: "yes", Usage: "carry the plan out", Destination: &f.yes},
			&cli.BoolFlag{Name: "force", Usage: "drains evict pods that declare no controller (as kubectl drain --force): nothing creates them again", Destination: &f.drain.Force},
			&cli.BoolFlag{Name: "delete-emptydir-data", Usage: "drains evict pods with emptyDir volumes, whose data is lost (as kubectl drain --delete-emptydir-data)", Destination: &f.drain.DeleteEmptyDirData},
			&cli.BoolFlag{Name: "delete-local-volume-data", Usage: "drains evict pods with hostPath volumes or claims bound to local PersistentVolumes, whose data is deleted with the VM", Destination: &f.drain.DeleteLocalVolumeData},
			&cli.BoolFlag{Name: "evict-do-not-disrupt", Usage: "drains evict pods annotated cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\" or karpenter.sh/do-not-disrupt: \"true\"", Destination: &f.drain.EvictDoNotDisrupt},
			&cli.StringFlag{Name: "compute-endpoint", Value: rollout.DefaultComputeEndpoint, Usage: "Compute Engine API v1 base `URL`", Destination: &f.endpoint},
			&cli.DurationFlag{Name: "wait", Usage: "with --yes, wait up to `DURATION` for the lock another rollout holds (default: refuse at once)", Destination: &f.wait},
			&cli.DurationFlag{Name: "poll", Value: 5 * time.Second, Usage: "look again every `DURATION` while waiting", Destination: &f.poll},
			sourceFlag(&f.src),
			clusterFlag(&f.src),
			outputFlag(&f.output),
		},
		OnUsageError: onUsageError,
		Action:       func(c *cli.Context) error { return runRollout(c, s, f) },
	}
}

// runRollout is rollout's action: the nodes' file is read (or the
// cluster's client made) before the source is loaded; a plan is printed,
// and with --yes carried out.
func runRollout(c *cli.Context, s *streams, f *rolloutFlags) error {
	if err := noArgs(c); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	var nodesData []byte
	var cluster *kube.Client
	if f.nodesFile != "" {
		var err error
		if nodesData, err = readInput(s, f.nodesFile); err != nil {
			return err
		}
	} else {
		var err error
		if cluster, err = liveCluster(f.kubeconfig); err != nil {
			return err
		}
	}
	rc, err := oneCluster(s, &f.src, "rollout")
	if err != nil {
		return err
	}
	src, revs := rc.Member.Source, rc.Revisions
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if nodesData != nil {
		list, err := drift.ReadNodes(f.nodesFile, nodesData)
		if err != nil {
			return err
		}
		return printPlan(s, rollout.MakePlan(src, revs, list), src.Cluster.Autoscaler.NodeGroup, f.output)
	}
	list, err := cluster.ListNodes(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	plan := rollout.MakePlan(src, revs, list.Items)
	f.useCompute(ctx, s, src, &plan)
	pods, err := cluster.ListPods(ctx, metav1.NamespaceAll, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	local, err := rollout.ReadLocalClaims(ctx, cluster, pods.Items)
	if err != nil {
		return err
	}
	plan.AddPods(pods.Items, f.drain, local)
	if err := printPlan(s, plan, src.Cluster.Autoscaler.NodeGroup, f.output); err != nil || !f.yes {
		return err
	}
	return f.carryOut(ctx, s, src, revs, cluster)
}

// kubeconfigDefault says whether there is a kubeconfig a command that
// reads the live cluster uses without --kubeconfig, as kubectl does: the
// files $KUBECONFIG names or, without it, ~/.kube/config.
func kubeconfigDefault() bool {
	if os.Getenv(kube.KubeconfigEnv) != "" {
		return true
	}
	_, err := os.Stat(kube.HomeKubeconfig())
	return err == nil
}

// liveCluster makes the client of the cluster of the kubeconfig file, or
// with "" of the files $KUBECONFIG names, as kubectl reads them.
func liveCluster(kubeconfig string) (*kube.Client, error) {
	if kubeconfig != "" {
		c, err := kube.FromKubeconfig(kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		return c, nil
	}
	c, err := kube.FromKubeconfigEnv()
	if err != nil {
		if os.Getenv(kube.KubeconfigEnv) == "" {
			return nil, fmt.Errorf("%s: %w", kube.HomeKubeconfig(), err)
		}
		return nil, fmt.Errorf("$%s (%s): %w", kube.KubeconfigEnv, os.Getenv(kube.KubeconfigEnv), err)
	}
	return c, nil
}

// check refuses the flags' combinations that make no sense.
func (f *rolloutFlags) check() error {
	if err := checkOutput(f.output); err != nil {
		return err
	}
	switch {
	case f.dryRun && f.yes:
		return usageError{fmt.Errorf("use --dry-run or --yes, not both")}
	case f.nodesFile != "" && f.kubeconfig != "":
		return usageError{fmt.Errorf("use --nodes or --kubeconfig, not both")}
	case f.yes && (f.nodesFile != "" || f.kubeconfig == "" && !kubeconfigDefault()):
		return usageError{fmt.Errorf("rollout --yes needs the live cluster, --kubeconfig FILE, $%s or %s: it changes it", kube.KubeconfigEnv, kube.HomeKubeconfigName)}
	case f.nodesFile == "" && f.kubeconfig == "" && !kubeconfigDefault():
		return usageError{fmt.Errorf("rollout needs --nodes FILE, --kubeconfig FILE, $%s or %s", kube.KubeconfigEnv, kube.HomeKubeconfigName)}
	case f.wait != 0 && !f.yes:
		return usageError{fmt.Errorf("--wait waits for the lock of --yes; a plan takes none")}
	case f.wait < 0:
		return usageError{fmt.Errorf("--wait %s: a duration of 0 or more", f.wait)}
	case f.yes && f.output == "json":
		return usageError{fmt.Errorf("-o json prints a plan; it does not go with --yes")}
	}
	return nil
}

// useCompute corrects the plan with the revisions Compute gives the
// instances of each MIG that holds nodes (rollout.Compute.InstanceRevisions,
// Plan.UseInstanceRevisions), as --yes does before each batch: a node's
// kubelet may set its own revision label. Without Compute API credentials,
// or for a MIG Compute does not answer for, the plan keeps the labels'
// answer there, and says so on stderr.
func (f *rolloutFlags) useCompute(ctx context.Context, s *streams, src *model.Source, plan *rollout.Plan) {
	httpClient, err := google.DefaultClient(ctx, rollout.ComputeScope)
	if err != nil {
		fmt.Fprintf(s.err, "nodegen: the plan's revisions are the Nodes' labels, which their kubelets may set: no Compute API credentials (%v)\n", err)
		return
	}
	c := &rollout.Compute{Endpoint: f.endpoint, HTTP: httpClient}
	cl := &src.Cluster
	cache := map[string]string{}
	for _, gp := range plan.Groups {
		g := src.NodeGroups[gp.Group]
		if g == nil || !g.Cloud() {
			continue
		}
		for _, mp := range gp.MIGs {
			if len(mp.Current)+len(mp.Stale) == 0 {
				continue
			}
			mig := cl.MIGName(g, mp.Zone)
			instances, err := c.InstanceRevisions(ctx, cl.GCP.Project, mp.Zone, mig, cache)
			if err != nil {
				fmt.Fprintf(s.err, "nodegen: the plan's revisions in MIG %s are the Nodes' labels, which their kubelets may set: %v\n", mig, err)
				continue
			}
			plan.UseInstanceRevisions(src, g, mp.Zone, instances)
		}
	}
}

// carryOut runs the rollout on the live cluster, with the credentials
// of the Compute API from the environment.
func (f *rolloutFlags) carryOut(ctx context.Context, s *streams, src *model.Source, revs map[string]string, cluster rollout.Cluster) error {
	httpClient, err := google.DefaultClient(ctx, rollout.ComputeScope)
	if err != nil {
		return fmt.Errorf("compute API credentials: %w", err)
	}
	r := &rollout.Runner{
		Src: src, Revisions: revs, Kube: cluster,
		Compute:  &rollout.Compute{Endpoint: f.endpoint, HTTP: httpClient},
		Progress: &rollout.Progress{W: s.out, Terminal: isTerminal(s.out)},
		Poll:     f.poll,
		Drain:    f.drain,
		LockWait: f.wait,
	}
	if err := r.Run(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("rollout interrupted; run it again to resume: %w", err)
		}
		return err
	}
	return nil
}

func printPlan(s *streams, plan rollout.Plan, autoscalerGroup, output string) error {
	if output == "json" {
		return writeJSON(s.out, plan)
	}
	return plan.WriteText(s.out, autoscalerGroup)
}
