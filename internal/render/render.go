// Package render turns a resolved source into nodegen's artifacts, in memory:
// a map from a path under out/ to the file's bytes.
package render

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/par"
)

func hashHeader(origin string) string { return "# " + layout.HeaderLine(origin) + "\n" }

// All renders every artifact of src. The node groups' files are rendered
// in parallel; the result does not depend on the order.
func All(src *model.Source) (layout.Files, error) {
	cloud := src.CloudGroups()
	type groupFiles struct {
		env, script []byte
		err         error
	}
	rendered := make([]groupFiles, len(cloud))
	par.Do(len(cloud), func(i int) {
		g, r := cloud[i], &rendered[i]
		origin := src.Origins[g.Name]
		if origin == "" {
			origin = src.Name
		}
		if r.env, r.err = KubeEnv(src, g, hashHeader(origin)); r.err != nil {
			r.err = fmt.Errorf("node group %s: %w", g.Name, r.err)
			return
		}
		if r.script, r.err = StartupScript(src, g, hashHeader(origin)); r.err != nil {
			r.err = fmt.Errorf("node group %s: %w", g.Name, r.err)
		}
	})
	files := make(layout.Files, 2*len(cloud)+4)
	for i, g := range cloud {
		if err := rendered[i].err; err != nil {
			return nil, err
		}
		files[layout.KubeEnvPath(g.Name)] = rendered[i].env
		files[layout.StartupScriptPath(g.Name)] = rendered[i].script
	}
	header := hashHeader(src.Name)
	k8s, err := TaintRemover(src, header)
	if err != nil {
		return nil, err
	}
	files[layout.TaintRemoverPath] = k8s
	if files[layout.NodeLifecyclePath], err = NodeLifecycle(src, header); err != nil {
		return nil, err
	}
	if RendersJoinTokenRenewer(src) {
		if files[layout.JoinTokenRenewerPath], err = JoinTokenRenewer(src, header); err != nil {
			return nil, err
		}
	}
	if files[layout.GPUOperatorValuesPath], err = GPUOperatorValues(src, header); err != nil {
		return nil, err
	}
	if files[layout.AutoscalerFlagsPath], err = AutoscalerFlags(src, header); err != nil {
		return nil, err
	}
	if files[layout.AutoscalerValuesPath], err = AutoscalerValues(src, header); err != nil {
		return nil, err
	}
	if pe, err := PriorityExpander(src, header); err != nil {
		return nil, err
	} else if pe != nil {
		files[layout.PriorityExpanderPath] = pe
	}
	if err := Terraform(src, files); err != nil {
		return nil, err
	}
	if err := Docs(src, files); err != nil {
		return nil, err
	}
	return files, nil
}
