// Package gce writes what a cloud node boots with, under out/gce/<group>/:
// each cloud group's kube-env (the Cluster Autoscaler's view of the
// group) and its startup script (the kubeadm join the VM runs at boot).
package gce

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/par"
	"github.com/nodegen/nodegen/internal/revision"
)

// NodeGroupFiles renders each cloud group's kube-env and startup script
// into files and returns the revision each declares, by group.
func NodeGroupFiles(src *model.Source, files layout.Files) (map[string]string, error) {
	cloud := src.CloudGroups()
	type groupFiles struct {
		env, script []byte
		rev         string
		err         error
	}
	rendered := make([]groupFiles, len(cloud))
	par.Do(len(cloud), func(i int) {
		g, r := cloud[i], &rendered[i]
		origin := src.Origins[g.Name]
		if origin == "" {
			origin = src.Name
		}
		if r.env, r.script, r.rev, r.err = groupArtifacts(src, g, layout.HashHeader(origin)); r.err != nil {
			r.err = fmt.Errorf("node group %s: %w", g.Name, r.err)
		}
	})
	revs := make(map[string]string, len(cloud))
	for i, g := range cloud {
		if err := rendered[i].err; err != nil {
			return nil, err
		}
		files[layout.KubeEnvPath(g.Name)] = rendered[i].env
		files[layout.StartupScriptPath(g.Name)] = rendered[i].script
		revs[g.Name] = rendered[i].rev
	}
	return revs, nil
}

// groupArtifacts renders a cloud group's kube-env and startup script, both
// declaring the group's revision, and returns the revision: they are
// rendered once, with revision.Placeholder as the label's value, and
// revision.Stamp writes the digest over it.
func groupArtifacts(src *model.Source, g *model.NodeGroup, header string) (env, script []byte, rev string, err error) {
	withLabel := *g
	withLabel.NodeLabels = make(map[string]string, len(g.NodeLabels)+1)
	for k, v := range g.NodeLabels {
		withLabel.NodeLabels[k] = v
	}
	withLabel.NodeLabels[model.RevisionLabel] = revision.Placeholder
	vars, err := kubeEnvVars(&withLabel)
	if err != nil {
		return nil, nil, "", err
	}
	joined, err := kubeenv.JoinVars(vars)
	if err != nil {
		return nil, nil, "", err
	}
	if env, err = kubeenv.Marshal(header, vars); err != nil {
		return nil, nil, "", err
	}
	if script, err = startupScript(src, &withLabel, header); err != nil {
		return nil, nil, "", err
	}
	// verify reads the kube-env back and recomputes the revision from
	// its bytes.
	if rev, err = revision.Stamp(src, g, joined, env, script); err != nil {
		return nil, nil, "", err
	}
	return env, script, rev, nil
}
