package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/explain"
)

const explainDoc = `explain reads Pods and the pod templates of Deployments, StatefulSets,
ReplicaSets, Jobs, CronJobs and DaemonSets (multi-document YAML or JSON; "-f -"
reads stdin) and says, for each one and each node group, whether the Cluster
Autoscaler would add a node of that group for it, and if not, every reason.

It builds the template node the autoscaler builds to scale each zonal MIG up
from zero: labels and taints from the group's kube-env (startup taints
removed) plus the labels the autoscaler adds itself, capacity from the
machine type, allocatable minus kube_reserved and evictionHard, and the pods
every fresh node runs (kube-proxy and the DaemonSets that land there). The
checks are the scheduler's: taints and tolerations, nodeSelector and required
node affinity, resource requests.

With --nodes FILE (kubectl get nodes -o json) it also names the autoscaled
groups that still have nodes of an older revision: the autoscaler builds a
group's template from one of its nodes before it reads kube-env, so until
nodegen rollout replaced them its scale-ups follow the old labels and taints.
It says what the rollout changes; the verdicts are the source's.

Exit 0 when every workload fits at least one autoscaled node group, 1 when
one does not (or on bad input), 2 on a usage mistake.`

// outputFlag is -o/--output: table or json.
func outputFlag(dst *string) cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output `FORMAT`: table or json", Destination: dst}
}

func checkOutput(format string) error {
	if format != "table" && format != "json" {
		return usageError{fmt.Errorf("unknown output format %q: use table or json", format)}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func explainCommand(s *streams) *cli.Command {
	var (
		src    ioFlags
		files  cli.StringSlice
		output string
		nodes  string
	)
	return &cli.Command{
		Name:        "explain",
		Usage:       "say whether the autoscaler would add a node of each group for a workload, and why not",
		Description: explainDoc,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "filename", Aliases: []string{"f"}, Usage: "workload manifest `FILE` (repeatable; - for stdin)", Destination: &files},
			&cli.StringFlag{Name: "nodes", Usage: "say which groups' templates still come from stale nodes in `FILE` (kubectl get nodes -o json)", Destination: &nodes},
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
			if len(files.Value()) == 0 {
				return usageError{fmt.Errorf("explain needs at least one -f FILE")}
			}
			var (
				workloads []*explain.Workload
				skipped   []explain.Skipped
				bad       bool
			)
			for _, name := range files.Value() {
				data, err := readInput(s, name)
				if err != nil {
					return err
				}
				ws, sk, err := explain.Decode(name, data)
				if err != nil {
					fmt.Fprintln(s.err, err)
					bad = true
				}
				workloads, skipped = append(workloads, ws...), append(skipped, sk...)
			}
			if bad {
				return errFindings
			}
			if len(workloads) == 0 {
				return fmt.Errorf("no Pods or pod templates in %v", files.Value())
			}
			model, rendered, err := oneCluster(s, &src, "explain")
			if err != nil {
				return err
			}
			e, err := explain.New(model, rendered, workloads)
			if err != nil {
				return err
			}
			r := e.Explain(workloads)
			r.Skipped = skipped
			if output == "json" {
				err = writeJSON(s.out, r)
			} else {
				for _, sk := range skipped {
					fmt.Fprintf(s.err, "nodegen: %s: skipped %s %s: no pod template\n", sk.Pos, sk.Kind, sk.Name)
				}
				err = explain.WriteTable(s.out, r)
			}
			if err != nil {
				return err
			}
			if nodes != "" {
				notes := s.out
				if output == "json" {
					notes = s.err
				}
				if err := staleTemplates(s, notes, model, rendered, nodes); err != nil {
					return err
				}
			}
			if !r.AllFit {
				return errFindings
			}
			for _, n := range r.Autoscaler {
				if n.Blocks {
					return errFindings
				}
			}
			return nil
		},
	}
}

// readInput reads a file, or stdin for "-".
func readInput(s *streams, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(s.in)
	}
	return os.ReadFile(name)
}
