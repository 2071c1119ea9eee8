// Package render turns a resolved source into nodegen's artifacts, in memory:
// a map from a path under out/ to the file's bytes.
package render

import (
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render/autoscaler"
	"github.com/nodegen/nodegen/internal/render/docs"
	"github.com/nodegen/nodegen/internal/render/gce"
	"github.com/nodegen/nodegen/internal/render/images"
	"github.com/nodegen/nodegen/internal/render/k8s"
	"github.com/nodegen/nodegen/internal/render/monitoring"
	"github.com/nodegen/nodegen/internal/render/onprem"
	"github.com/nodegen/nodegen/internal/render/terraform"
)

// A stage renders some of the artifacts into files. Every renderer runs
// as one, in the order of stages.
type stage func(src *model.Source, files layout.Files) error

// stages are the renderers in pipeline order, after the node groups'
// kube-env and startup scripts (gce.NodeGroupFiles): the cluster-wide
// files, Terraform (which reads the node groups' files with file()), and
// the docs last, since they describe every other artifact.
var stages = []stage{
	k8s.Files,
	k8s.Calico,
	file(layout.AutoscalerFlagsPath, autoscaler.Flags),
	file(layout.AutoscalerValuesPath, autoscaler.Values),
	file(layout.PriorityExpanderPath, autoscaler.PriorityExpander),
	file(layout.AutoscalerDockerfilePath, autoscaler.Dockerfile),
	file(layout.AutoscalerPatchPath, autoscaler.Patch),
	file(layout.OnpremProviderIDPath, onprem.ProviderIDScript),
	file(layout.OnpremLabelNodesPath, onprem.LabelNodesScript),
	onprem.JoinScripts,
	terraform.Terraform,
	onprem.VPN,
	images.Images,
	monitoring.Files,
	docs.Day0,
	docs.NodeGroups,
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

// Output is a source rendered: its artifacts, and each cloud group's
// revision, which the group's kube-env and startup script declare.
type Output struct {
	// Files are the artifacts, by path under out/.
	Files layout.Files
	// Revisions are the cloud groups' revisions, by group name.
	Revisions map[string]string
}

// Render renders every artifact of src, the node groups' kube-env and
// startup scripts first, then stage by stage. The node groups' files are
// rendered in parallel; the result does not depend on the order.
func Render(src *model.Source) (Output, error) {
	files := make(layout.Files, 3*len(src.NodeGroups)+16)
	revs, err := gce.NodeGroupFiles(src, files)
	if err != nil {
		return Output{}, err
	}
	for _, run := range stages {
		if err := run(src, files); err != nil {
			return Output{}, err
		}
	}
	return Output{Files: files, Revisions: revs}, nil
}

// All is Render's files.
func All(src *model.Source) (layout.Files, error) {
	out, err := Render(src)
	return out.Files, err
}
