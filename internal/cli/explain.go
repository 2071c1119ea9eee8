package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/drift"
	"github.com/nodegen/nodegen/internal/explain"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/rollout"
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

It prints every autoscaled group's init budget: how long a new node of it
may take to register (its maxNodeProvisionTime) and then to be ready
(--max-node-startup-time), what the node needs of that (its driver and GPU
validation on a GPU group), and, with an autoscaler build that adds no node
while one is upcoming, that each scale-up of the group freezes every other
for up to the whole budget.

With cluster.podNetwork it also prints the pod MTU nodegen renders and how
it was derived: the MTU of every path a pod packet takes (both sides' NICs,
each VPN tunnel's payload MTU), the smallest less the encapsulation's
overhead.

Exit 0 when every workload fits at least one autoscaled node group, 1 when
one does not (or on bad input), 2 on a usage mistake.`

// explainFlags are explain's flags.
type explainFlags struct {
	src    ioFlags
	files  cli.StringSlice
	output string
	nodes  string
}

func explainCommand(s *streams) *cli.Command {
	f := &explainFlags{}
	return &cli.Command{
		Name:        "explain",
		Usage:       "say whether the autoscaler would add a node of each group for a workload, and why not",
		Description: explainDoc,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "filename", Aliases: []string{"f"}, Usage: "workload manifest `FILE` (repeatable; - for stdin)", Destination: &f.files},
			&cli.StringFlag{Name: "nodes", Usage: "say which groups' templates still come from stale nodes in `FILE` (kubectl get nodes -o json)", Destination: &f.nodes},
			sourceFlag(&f.src),
			clusterFlag(&f.src),
			outputFlag(&f.output),
		},
		OnUsageError: onUsageError,
		Action:       func(c *cli.Context) error { return runExplain(c, s, f) },
	}
}

// runExplain is explain's action: the workloads are read (and bad input
// reported) before the source is loaded.
func runExplain(c *cli.Context, s *streams, f *explainFlags) error {
	if err := noArgs(c); err != nil {
		return err
	}
	if err := checkOutput(f.output); err != nil {
		return err
	}
	if len(f.files.Value()) == 0 {
		return usageError{fmt.Errorf("explain needs at least one -f FILE")}
	}
	workloads, skipped, err := readWorkloads(s, f.files.Value())
	if err != nil {
		return err
	}
	rc, err := oneCluster(s, &f.src, "explain")
	if err != nil {
		return err
	}
	model, rendered := rc.Member.Source, rc.Files
	e, err := explain.New(model, rendered, workloads)
	if err != nil {
		return err
	}
	r := e.Explain(workloads)
	r.Skipped = skipped
	if f.output == "json" {
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
	if f.nodes != "" {
		notes := s.out
		if f.output == "json" {
			notes = s.err
		}
		if err := staleTemplates(s, notes, model, rc.Revisions, f.nodes); err != nil {
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
}

// readWorkloads reads the workloads of the files (- for stdin), printing
// each file's problems; any is errFindings, and no workload at all an
// error.
func readWorkloads(s *streams, files []string) ([]*explain.Workload, []explain.Skipped, error) {
	var (
		workloads []*explain.Workload
		skipped   []explain.Skipped
		bad       bool
	)
	for _, name := range files {
		data, err := readInput(s, name)
		if err != nil {
			return nil, nil, err
		}
		ws, sk, err := explain.Decode(name, data)
		if err != nil {
			fmt.Fprintln(s.err, err)
			bad = true
		}
		workloads, skipped = append(workloads, ws...), append(skipped, sk...)
	}
	if bad {
		return nil, nil, errFindings
	}
	if len(workloads) == 0 {
		return nil, nil, fmt.Errorf("no Pods or pod templates in %v", files)
	}
	return workloads, skipped, nil
}

// staleTemplates tells, for each autoscaled group with stale nodes among
// the nodes of nodesFile, that the autoscaler builds its template from
// one of those nodes rather than from kube-env (it prefers a healthy node
// of the group), so that its scale-ups follow the old labels and taints
// until nodegen rollout replaced them; and what the rollout changes.
func staleTemplates(s *streams, w io.Writer, src *model.Source, revs map[string]string, nodesFile string) error {
	data, err := readInput(s, nodesFile)
	if err != nil {
		return err
	}
	nodes, err := drift.ReadNodes(nodesFile, data)
	if err != nil {
		return err
	}
	plan := rollout.MakePlan(src, revs, nodes)
	var b strings.Builder
	for _, g := range plan.Groups {
		stale := g.Stale()
		if stale == 0 || !src.NodeGroups[g.Group].Autoscaled() {
			continue
		}
		var names, current []string
		for _, m := range g.MIGs {
			for _, n := range m.Stale {
				names = append(names, n.Name)
			}
			current = append(current, m.Current...)
		}
		fmt.Fprintf(&b, "\n%s: %d stale %s (%s) at another revision than the source's %s.", g.Group, stale, plural(stale, "node", "nodes"), strings.Join(names, ", "), g.Revision)
		if len(current) == 0 {
			b.WriteString(" Until nodegen rollout replaces them, the autoscaler builds the group's template from one of them, not from kube-env, so its scale-ups follow the old nodes' labels and taints; the verdicts above are the source's, as after the rollout.\n")
		} else {
			b.WriteString(" The autoscaler builds the group's template from one of its healthy nodes, the old ones included, so until nodegen rollout replaced them its scale-ups may follow the old labels and taints; the verdicts above are the source's, as after the rollout.\n")
		}
		for _, c := range g.Changes {
			fmt.Fprintf(&b, "  after the rollout: %s\n", c)
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
