package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/schemadoc"
)

const docsDoc = `docs prints documentation as Markdown.

With --schema it prints the reference of the source format: every field
with its type, default and comment, read from the schema built into
nodegen, so it always matches the binary. Without --schema it prints the
node-group documentation of the source: what gen writes to
out/docs/nodegroups.md. Of a fleet source it prints the fleet's drawing
(out/docs/fleet.md) and then each cluster's node-group documentation;
with --cluster only those clusters'.`

func docsCommand(s *streams) *cli.Command {
	f := &ioFlags{}
	var schemaRef bool
	return &cli.Command{
		Name:        "docs",
		Usage:       "print the source format reference (--schema) or the node-group docs",
		Description: docsDoc,
		Flags: []cli.Flag{
			sourceFlag(f),
			clusterFlag(f),
			&cli.BoolFlag{Name: "schema", Usage: "print the reference of the source format (no source needed)", Destination: &schemaRef},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			if schemaRef {
				sch, err := schemadoc.Load()
				if err != nil {
					return err
				}
				_, err = s.out.Write(sch.Reference())
				return err
			}
			r, err := runPipeline(s, f)
			if err != nil {
				return err
			}
			// A fleet's drawing first (without --cluster), then each
			// cluster's node groups.
			if b, ok := r.Files[layout.FleetDocsPath]; ok {
				if _, err := s.out.Write(b); err != nil {
					return err
				}
			}
			for _, c := range r.Clusters {
				if _, err := s.out.Write(c.Files[layout.DocsPath]); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
