package cli

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodegen/nodegen/internal/drift"
)

const driftDoc = `drift compares the real world with the source.

Nodes come from --nodes FILE (the output of kubectl get nodes -o json; - for
stdin) or from a live cluster with --kubeconfig FILE. Each node is matched to
its group by its providerID (an instance of the group's MIG, as the
autoscaler maps it) or by the nodegen.dev/node-group label. Reported: labels
and taints missing, extra or different from the source (the node's own
labels, set by the kubelet, and those of Node Feature Discovery and the GPU
Operator are not extra; zone, region, instance type, os and arch are
compared on cloud nodes); a startup taint still present on a node older than
--stuck-after; nvidia.com/gpu allocatable different from the group's GPU
count (not while the node is still initialising); nodes labelled with a
group that no longer exists; cloud nodes (gce:// providerID) of no group;
stale cloud nodes, whose nodegen.dev/revision label is not their group's
current revision (made from an older source: nodegen rollout replaces them).

Instance templates come from --instance-template FILE (the output of gcloud
compute instance-templates describe --format=json, or list --format=json;
repeatable). Each is matched to its group by name prefix; its kube-env and
startup-script metadata are compared with what gen renders now, its
guestAccelerators with the group's GPU, its machine type and boot disk size
with the source.

Exit 0 when nothing drifted, 1 on any drift (or bad input), 2 on a usage
mistake.`

func driftCommand(s *streams) *cli.Command {
	var (
		src        ioFlags
		nodesFile  string
		kubeconfig string
		templates  cli.StringSlice
		output     string
		stuckAfter time.Duration
		now        string
	)
	return &cli.Command{
		Name:        "drift",
		Usage:       "compare cluster nodes and instance templates with the source",
		Description: driftDoc,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "nodes", Usage: "`FILE` holding kubectl get nodes -o json output (- for stdin)", Destination: &nodesFile},
			&cli.StringFlag{Name: "kubeconfig", Usage: "read the nodes live from the cluster of this kubeconfig `FILE`", Destination: &kubeconfig},
			&cli.StringSliceFlag{Name: "instance-template", Usage: "`FILE` holding gcloud instance-templates describe/list --format=json output (repeatable)", Destination: &templates},
			sourceFlag(&src),
			clusterFlag(&src),
			outputFlag(&output),
			&cli.DurationFlag{Name: "stuck-after", Value: 30 * time.Minute, Usage: "a startup taint older than `DURATION` is stuck", Destination: &stuckAfter},
			&cli.StringFlag{Name: "now", Usage: "measure node ages as if it were this RFC 3339 `TIME` (reproducible reports)", Destination: &now},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			if nodesFile != "" && kubeconfig != "" {
				return usageError{fmt.Errorf("use --nodes or --kubeconfig, not both")}
			}
			if nodesFile == "" && kubeconfig == "" && len(templates.Value()) == 0 {
				return usageError{fmt.Errorf("drift needs --nodes FILE, --kubeconfig FILE or --instance-template FILE")}
			}
			opts := drift.Options{Now: time.Now(), StuckAfter: stuckAfter}
			if now != "" {
				t, err := time.Parse(time.RFC3339, now)
				if err != nil {
					return usageError{fmt.Errorf("--now: %v", err)}
				}
				opts.Now = t
			}
			// Read every input before loading the source, so that bad input
			// is reported first.
			var tmpls []*drift.InstanceTemplate
			for _, name := range templates.Value() {
				data, err := readInput(s, name)
				if err != nil {
					return err
				}
				ts, err := drift.ReadTemplates(name, data)
				if err != nil {
					return err
				}
				tmpls = append(tmpls, ts...)
			}
			var cs *corev1client.CoreV1Client
			var nodesData []byte
			switch {
			case kubeconfig != "":
				cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
				if err != nil {
					return fmt.Errorf("kubeconfig: %w", err)
				}
				if cs, err = corev1client.NewForConfig(cfg); err != nil {
					return fmt.Errorf("kubeconfig: %w", err)
				}
			case nodesFile != "":
				var err error
				if nodesData, err = readInput(s, nodesFile); err != nil {
					return err
				}
			}
			model, rendered, err := oneCluster(s, &src, "drift")
			if err != nil {
				return err
			}
			if opts.Revisions, err = drift.Revisions(model, rendered); err != nil {
				return err
			}
			var (
				nodes     []drift.NodeResult
				unmanaged []string
			)
			switch {
			case cs != nil:
				if nodes, unmanaged, err = drift.CheckNodesOf(c.Context, model, cs, opts); err != nil {
					return err
				}
			case nodesData != nil:
				list, err := drift.ReadNodes(nodesFile, nodesData)
				if err != nil {
					return err
				}
				nodes, unmanaged = drift.CheckNodes(model, list, opts)
			}
			var tr []drift.TemplateResult
			if len(tmpls) > 0 {
				tr = drift.CheckTemplates(model, rendered, tmpls)
			}
			r := drift.NewReport(nodes, unmanaged, tr)
			if output == "json" {
				err = writeJSON(s.out, r)
			} else {
				err = drift.WriteText(s.out, r)
			}
			if err != nil {
				return err
			}
			if r.Drift {
				return errFindings
			}
			return nil
		},
	}
}
