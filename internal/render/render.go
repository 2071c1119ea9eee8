// Package render turns a resolved source into nodegen's artifacts, in memory:
// a map from a path under out/ to the file's bytes.
package render

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/par"
	"github.com/nodegen/nodegen/internal/render/autoscaler"
	"github.com/nodegen/nodegen/internal/render/k8s"
	"github.com/nodegen/nodegen/internal/render/onprem"
	"github.com/nodegen/nodegen/internal/render/terraform"
	"github.com/nodegen/nodegen/internal/revision"
)

// A stage renders some of the artifacts into files. Every renderer runs
// as one, in the order of stages.
type stage func(src *model.Source, files layout.Files) error

// stages are the renderers in pipeline order: the node groups' kube-env
// and startup scripts first, then the cluster-wide files, Terraform (which
// reads the node groups' files with file()), and the docs last, since
// they describe every other artifact.
var stages = []stage{
	nodeGroupFiles,
	k8s.Files,
	file(layout.AutoscalerFlagsPath, autoscaler.Flags),
	file(layout.AutoscalerValuesPath, autoscaler.Values),
	file(layout.PriorityExpanderPath, autoscaler.PriorityExpander),
	file(layout.AutoscalerDockerfilePath, autoscaler.Dockerfile),
	file(layout.AutoscalerPatchPath, autoscaler.Patch),
	file(layout.OnpremProviderIDPath, onprem.ProviderIDScript),
	terraform.Terraform,
	onprem.VPN,
	Images,
	Day0Docs,
	Docs,
}

// file is the stage of a renderer of one cluster-wide file at path; a
// renderer that returns no bytes renders no file for this source.
func file(path string, render func(src *model.Source, header string) ([]byte, error)) stage {
	return func(src *model.Source, files layout.Files) error {
		b, err := render(src, layout.HashHeader(src.Name))
		if err == nil && b != nil {
			files[path] = b
		}
		return err
	}
}

// All renders every artifact of src, stage by stage. The node groups'
// files are rendered in parallel; the result does not depend on the order.
func All(src *model.Source) (layout.Files, error) {
	files := make(layout.Files, 3*len(src.NodeGroups)+16)
	for _, run := range stages {
		if err := run(src, files); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// nodeGroupFiles renders each cloud group's kube-env and startup script.
func nodeGroupFiles(src *model.Source, files layout.Files) error {
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
		if r.env, r.script, r.err = groupArtifacts(src, g, layout.HashHeader(origin)); r.err != nil {
			r.err = fmt.Errorf("node group %s: %w", g.Name, r.err)
		}
	})
	for i, g := range cloud {
		if err := rendered[i].err; err != nil {
			return err
		}
		files[layout.KubeEnvPath(g.Name)] = rendered[i].env
		files[layout.StartupScriptPath(g.Name)] = rendered[i].script
	}
	return nil
}

// groupArtifacts renders a cloud group's kube-env and startup script, both
// declaring the group's revision: they are rendered with the revision label
// empty, its digest taken (revision.Of), then filled in.
func groupArtifacts(src *model.Source, g *model.NodeGroup, header string) (env, script []byte, err error) {
	withLabel := *g
	withLabel.NodeLabels = make(map[string]string, len(g.NodeLabels)+1)
	for k, v := range g.NodeLabels {
		withLabel.NodeLabels[k] = v
	}
	withLabel.NodeLabels[model.RevisionLabel] = ""
	vars, err := KubeEnvVars(&withLabel)
	if err != nil {
		return nil, nil, err
	}
	joined, err := kubeenv.JoinVars(vars)
	if err != nil {
		return nil, nil, err
	}
	if env, err = kubeenv.Marshal(header, vars); err != nil {
		return nil, nil, err
	}
	if script, err = StartupScript(src, &withLabel, header); err != nil {
		return nil, nil, err
	}
	// The kube-env holds joined with the revision label empty; verify
	// reads it back and recomputes the revision from its bytes.
	env, script = revision.StampEnvVars(src, g, joined, env, script)
	return env, script, nil
}
