package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/diff"
	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/secrets"
)

const checkDoc = `check renders the source in memory and compares it with the output
directory. It is silent and exits 0 when they are equal; otherwise it
prints each stale file with a unified diff and exits 1.

When neither the source, nor the output directory, nor nodegen, nor its
flags and environment changed since a full gen or check of this output
directory, check answers from that run's record without evaluating the
source (README, Commands; docs/ci-and-hooks.md, "When nothing changed,
check does not render"). --full always renders and compares.

With --by-hand, a check that passes then prints, per cluster, what nodegen
cannot verify from the source (the network paths the nodes need, what the
images hold, the join token's secret, the mesh gateways' reachability, the
zones of a GPU group where nodegen's accelerator table has no source) and a
command that verifies each by hand (docs/validation.md, "What vet cannot
know").`

func checkCommand(s *streams) *cli.Command {
	var flags *ioFlags
	cmd := renderCommand(s, "check", "fail with a diff when the output directory is not what gen would write", checkDoc,
		func(f *ioFlags) []cli.Flag {
			flags = f
			byHand := &cli.BoolFlag{Name: "by-hand", Usage: "after a clean check, print what nodegen cannot verify from the source and how to verify each by hand", Destination: &f.ByHand}
			return append(append(outFlags(false)(f), shortcutFlags(f)...), byHand)
		},
		func(f *ioFlags, rd *pipeline.Result) error {
			if err := outDirUsable(f.Out, true); err != nil {
				return err
			}
			r, err := outdir.CompareWith(f.Out, rd.Files, outOptions(s, f, rd))
			if err != nil {
				return err
			}
			if r.Clean() {
				f.ManifestDigest = r.ManifestDigest
				if f.ByHand {
					printByHand(s, f, rd)
				}
				return nil
			}
			changes := r.Changes
			if r.Manifest != nil {
				changes = append(changes, *r.Manifest)
			}
			for _, c := range r.Conflicts {
				fmt.Fprintf(s.err, "nodegen: %s\n", conflictLine(f, c))
			}
			for _, ch := range changes {
				fmt.Fprintf(s.err, "nodegen: %s is stale (%s)\n", outPath(f, ch.Path), staleReason(ch))
			}
			for _, c := range r.Conflicts {
				p := outPath(f, c.Path)
				s.out.Write([]byte(secrets.Redact(string(diff.Diff(p, c.Old, p+" (generated)", c.New)))))
			}
			for _, ch := range changes {
				p := outPath(f, ch.Path)
				s.out.Write([]byte(secrets.Redact(string(diff.Diff(p, ch.Old, p+" (generated)", ch.New)))))
			}
			first := ""
			if len(r.Conflicts) > 0 {
				first = "resolve the files above, then "
			}
			only := ""
			if rd.Selected {
				only = " --cluster " + strings.Join(f.Clusters.Value(), ",")
			}
			fmt.Fprintf(s.err, "nodegen: %srun `nodegen gen --source %s --out %s%s` and commit the result\n", first, f.Source, f.Out, only)
			sayLeaving(s.err, leavingMIGs(r.Changes), autoscalerUpgrade(f, rd))
			sayStartRepairing(s.err, startRepairing(r.Changes))
			return errFindings
		})
	cmd.Action = shortcut(s, flags, cmd.Action)
	return cmd
}

func staleReason(ch outdir.Change) string {
	switch ch.Kind {
	case outdir.Added:
		return "missing"
	case outdir.Removed:
		return "no longer generated"
	case outdir.Mode:
		return fmt.Sprintf("mode %04o, want %04o", uint32(ch.OldMode), uint32(ch.NewMode))
	}
	return "differs"
}

// printByHand prints what nodegen cannot verify of the selected clusters
// (all without --cluster), and how to verify each by hand: one line per
// item, its command indented under it.
func printByHand(s *streams, f *ioFlags, rd *pipeline.Result) {
	only := f.Clusters.Value()
	for _, b := range rd.Source.Fleet.ByHand() {
		if len(only) > 0 && !slices.Contains(only, b.Cluster) {
			continue
		}
		fmt.Fprint(s.out, secrets.Redact(fmt.Sprintf("%s: %s\n    %s\n", b.Cluster, b.What, b.How)))
	}
}
