package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/oauth2/google"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodegen/nodegen/internal/drift"
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
get nodes -o json) or live from --kubeconfig FILE.

With --yes (and --kubeconfig) it carries the plan out, per zonal MIG, a
batch of cluster.rollout.surge stale nodes at a time: it creates their
replacement VMs through the MIG (createInstances), waits until they are
Ready and rid of their startup taint, cordons each old node, drains it
through the Eviction API (PodDisruptionBudgets respected, no pod deleted),
deletes it through the MIG (deleteInstances) and deletes its Node. First it
checks that the MIG's instance template declares the current revision
(terraform apply ran). It can be stopped at any time (Ctrl-C, or killed)
and run again: it resumes from what the cluster and the MIGs show. A drain
that a PodDisruptionBudget blocks for cluster.rollout.drainTimeout stops it
with the node schedulable again and nothing deleted.

The Compute API is called with Application Default Credentials
(GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, or
the metadata server).

Exit 0 when done (or for a plan), 1 when the rollout stopped or failed, 2 on
a usage mistake.`

func rolloutCommand(s *streams) *cli.Command {
	var (
		src        ioFlags
		nodesFile  string
		kubeconfig string
		output     string
		dryRun     bool
		yes        bool
		endpoint   string
		poll       time.Duration
	)
	return &cli.Command{
		Name:        "rollout",
		Usage:       "replace the cloud nodes made from an older source (a plan, unless --yes)",
		Description: rolloutDoc,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "nodes", Usage: "plan from `FILE` holding kubectl get nodes -o json output (- for stdin)", Destination: &nodesFile},
			&cli.StringFlag{Name: "kubeconfig", Usage: "the cluster of this kubeconfig `FILE`", Destination: &kubeconfig},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan only (the default without --yes)", Destination: &dryRun},
			&cli.BoolFlag{Name: "yes", Usage: "carry the plan out", Destination: &yes},
			&cli.StringFlag{Name: "compute-endpoint", Value: rollout.DefaultComputeEndpoint, Usage: "Compute Engine API v1 base `URL`", Destination: &endpoint},
			&cli.DurationFlag{Name: "poll", Value: 5 * time.Second, Usage: "look again every `DURATION` while waiting", Destination: &poll},
			sourceFlag(&src),
			clusterFlag(&src),
			outputFlag(&output),
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			switch {
			case dryRun && yes:
				return usageError{fmt.Errorf("use --dry-run or --yes, not both")}
			case nodesFile != "" && kubeconfig != "":
				return usageError{fmt.Errorf("use --nodes or --kubeconfig, not both")}
			case yes && kubeconfig == "":
				return usageError{fmt.Errorf("rollout --yes needs --kubeconfig FILE: it changes the live cluster")}
			case nodesFile == "" && kubeconfig == "":
				return usageError{fmt.Errorf("rollout needs --nodes FILE or --kubeconfig FILE")}
			case yes && output == "json":
				return usageError{fmt.Errorf("-o json prints a plan; it does not go with --yes")}
			}
			var nodesData []byte
			var kube kubernetes.Interface
			if nodesFile != "" {
				var err error
				if nodesData, err = readInput(s, nodesFile); err != nil {
					return err
				}
			} else {
				cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
				if err != nil {
					return fmt.Errorf("kubeconfig: %w", err)
				}
				if kube, err = kubernetes.NewForConfig(cfg); err != nil {
					return fmt.Errorf("kubeconfig: %w", err)
				}
			}
			src, rendered, err := oneCluster(s, &src, "rollout")
			if err != nil {
				return err
			}
			revs, err := rollout.Revisions(src, rendered)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			if nodesData != nil {
				list, err := drift.ReadNodes(nodesFile, nodesData)
				if err != nil {
					return err
				}
				return printPlan(s, rollout.MakePlan(src, revs, list), src.Cluster.Autoscaler.NodeGroup, output)
			}
			list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("listing nodes: %w", err)
			}
			plan := rollout.MakePlan(src, revs, list.Items)
			if err := printPlan(s, plan, src.Cluster.Autoscaler.NodeGroup, output); err != nil || !yes {
				return err
			}
			httpClient, err := google.DefaultClient(ctx, rollout.ComputeScope)
			if err != nil {
				return fmt.Errorf("compute API credentials: %w", err)
			}
			r := &rollout.Runner{
				Src: src, Revisions: revs, Kube: kube,
				Compute:  &rollout.Compute{Endpoint: endpoint, HTTP: httpClient},
				Progress: &rollout.Progress{W: s.out, Terminal: isTerminal(s.out)},
				Poll:     poll,
			}
			if err := r.Run(ctx); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("rollout interrupted; run it again to resume: %w", err)
				}
				return err
			}
			return nil
		},
	}
}

func printPlan(s *streams, plan rollout.Plan, autoscalerGroup, output string) error {
	if output == "json" {
		return writeJSON(s.out, plan)
	}
	return plan.WriteText(s.out, autoscalerGroup)
}
