package cli

import (
	"encoding/json"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/pipeline"
)

// fleetExport is what export prints for a fleet source.
type fleetExport struct {
	Clusters map[string]*model.Source `json:"clusters"`
	Mesh     *model.Mesh              `json:"mesh,omitempty"`
}

func exportCommand(s *streams) *cli.Command {
	return renderCommand(s, "export", "print the resolved model, derived labels and taints included, as JSON",
		"export prints the source as nodegen resolved it: defaults applied, derived labels added.", nil,
		func(_ *ioFlags, r *pipeline.Result) error {
			enc := json.NewEncoder(s.out)
			enc.SetIndent("", "  ")
			if r.Source.Fleet.Single {
				return enc.Encode(r.Clusters[0].Member.Source)
			}
			out := fleetExport{Clusters: map[string]*model.Source{}}
			for _, c := range r.Clusters {
				out.Clusters[c.Member.Source.Cluster.Name] = c.Member.Source
			}
			if !r.Selected {
				out.Mesh = r.Source.Fleet.Mesh
			}
			return enc.Encode(out)
		})
}
