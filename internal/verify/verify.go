// Package verify re-reads rendered artifacts the way their consumers do,
// so that nodegen never writes a file its consumer would reject or read
// differently from the source.
package verify

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/par"
	"github.com/nodegen/nodegen/internal/revision"
)

// All checks every rendered artifact. The node groups' artifacts are
// checked in parallel; the errors are reported in group order. Each
// artifact is parsed once: a group's kube-env, startup script and
// Terraform file are read by every check of the group that needs them,
// and the GPU Operator's values once for all groups.
func All(src *model.Source, files layout.Files) error {
	cloud := src.CloudGroups()
	flagged := src.ExtraStartupTaints()
	gpu := newGPUValues(files[layout.GPUOperatorValuesPath])
	groupErrs := make([][4]error, len(cloud))
	tfDiags := make(map[string]hcl.Diagnostics, len(cloud))
	tfParsed := make([]hcl.Diagnostics, len(cloud))
	var shapes scriptShapes
	var tfs tfShapes
	par.Do(len(cloud), func(i int) {
		g := cloud[i]
		env := readKubeEnv(files[layout.KubeEnvPath(g.Name)])
		if err := env.check(g, flagged); err != nil {
			groupErrs[i][0] = &diag.GroupError{Group: g.Name, Path: layout.KubeEnvPath(g.Name), Err: err}
		} else if err := revision.CheckRead(src, g, files[layout.KubeEnvPath(g.Name)], files[layout.StartupScriptPath(g.Name)], env.tmpl); err != nil {
			groupErrs[i][0] = &diag.GroupError{Group: g.Name, Path: layout.KubeEnvPath(g.Name), Err: err}
		}
		// The group's Terraform file, parsed here once for capacity and
		// for the parse check of every .tf file (terraform below).
		tfPath := layout.TerraformGroupPath(g.Name)
		tf := tfs.read(files[tfPath], tfPath)
		tfParsed[i] = tf.diags
		if err := sameTemplate(src.InstanceTemplate(g), g.Name, tf); err != nil {
			groupErrs[i][3] = &diag.GroupError{Group: g.Name, Path: tfPath, Err: err}
		}
		// The script's quoted heredocs, which the checks below read, from
		// its syntax tree or from that of a script of its shape.
		scriptPath := layout.StartupScriptPath(g.Name)
		docs, err := shapes.heredocs(files[scriptPath])
		if err != nil {
			groupErrs[i][1] = &diag.GroupError{Group: g.Name, Path: scriptPath, Err: err}
			return
		}
		if err := joinConfiguration(src, g, docs, env, flagged); err != nil {
			groupErrs[i][2] = &diag.GroupError{Group: g.Name, Path: scriptPath, Err: err}
		} else if err := capacity(g, docs, env, gpu, tf); err != nil {
			groupErrs[i][2] = &diag.GroupError{Group: g.Name, Path: scriptPath, Err: err}
		}
	})
	for i, g := range cloud {
		if p := layout.TerraformGroupPath(g.Name); files[p] != nil {
			tfDiags[p] = tfParsed[i]
		}
	}
	var errs []error
	for _, e := range groupErrs {
		errs = append(errs, e[0], e[1], e[2], e[3])
	}
	if b := files[layout.OnpremProviderIDPath]; b != nil {
		if _, err := parseScript(b); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", layout.OnpremProviderIDPath, err))
		}
	} else if src.Cluster.SetsOnpremProviderID() {
		errs = append(errs, fmt.Errorf("%s: missing", layout.OnpremProviderIDPath))
	}
	if b := files[layout.OnpremLabelNodesPath]; b != nil {
		if _, err := parseScript(b); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", layout.OnpremLabelNodesPath, err))
		}
	}
	errs = append(errs, onpremJoins(src, files))
	for _, p := range []string{layout.AutoscalerNodePath, layout.TaintRemoverPath, layout.NodeLifecyclePath, layout.JoinTokenRenewerPath, layout.NodeCSRApproverPath, layout.PriorityExpanderPath} {
		if files[p] == nil && p == layout.JoinTokenRenewerPath && !src.Cluster.HasJoinTokenRenewer() {
			continue
		}
		if files[p] == nil && p == layout.NodeCSRApproverPath && !src.Cluster.HasNodeCSRApprover() {
			continue
		}
		if files[p] == nil && p == layout.PriorityExpanderPath && !src.Cluster.Autoscaler.UsesPriority() {
			continue
		}
		if _, err := k8sdecode.Objects(files[p]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	errs = append(errs, terraform(files, tfDiags))
	errs = append(errs, images(src, files))
	return errors.Join(errs...)
}

// kubeEnv is a kube-env read once the autoscaler's way
// (kubeenv.ReadTemplate) for every check of its group.
type kubeEnv struct {
	size int
	tmpl *kubeenv.Template
	err  error
}

func readKubeEnv(data []byte) *kubeEnv {
	t, err := kubeenv.ReadTemplate(data)
	return &kubeEnv{size: len(data), tmpl: t, err: err}
}

// check checks that a kube-env value fits in GCE metadata and that the
// autoscaler reads from it exactly the group's labels and taints.
func (e *kubeEnv) check(g *model.NodeGroup, flagged []string) error {
	if e.size > gce.MetadataValueLimit {
		return fmt.Errorf("%d bytes, over GCE's metadata value limit of %d", e.size, gce.MetadataValueLimit)
	}
	if e.err != nil {
		return e.err
	}
	return e.tmpl.MatchesSource(g, flagged...)
}

// parseScript parses a startup script as bash, after checking that it
// fits in GCE metadata.
func parseScript(data []byte) (*syntax.File, error) {
	if len(data) > gce.MetadataValueLimit {
		return nil, fmt.Errorf("%d bytes, over GCE's metadata value limit of %d", len(data), gce.MetadataValueLimit)
	}
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(data), "")
}
