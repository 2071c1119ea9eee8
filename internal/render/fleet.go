package render

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render/docs"
	"github.com/nodegen/nodegen/internal/render/istio"
	"github.com/nodegen/nodegen/internal/render/terraform"
)

// Cluster renders one cluster of a fleet: its artifacts, with paths
// relative to its tree (layout.ClusterDir), what a one-cluster source of
// that cluster renders into out/, and, when the cluster is in the fleet's
// mesh, its mesh artifacts (MeshFiles).
func Cluster(f *model.Fleet, src *model.Source) (Output, error) {
	out, err := Render(src)
	if err != nil {
		return Output{}, err
	}
	mesh, err := MeshFiles(f, src)
	if err != nil {
		return Output{}, err
	}
	if len(mesh) == 0 {
		return out, nil
	}
	for p, b := range mesh {
		out.Files[p] = b
	}
	// day0.md's role table covers the resource types of the mesh's load
	// balancer too.
	if err := docs.Day0(src, out.Files); err != nil {
		return Output{}, err
	}
	return out, nil
}

// MeshFiles renders the mesh artifacts of src, one cluster of f, with
// paths relative to the cluster's tree: the stages of a mesh cluster,
// out/istio, its docs and its east-west gateway's load balancer. A
// cluster outside the mesh has none.
func MeshFiles(f *model.Fleet, src *model.Source) (layout.Files, error) {
	mc := f.MeshCluster(src)
	if mc == nil {
		return layout.Files{}, nil
	}
	header := layout.HashHeader(src.Name)
	files := layout.Files{}
	for _, r := range []struct {
		path   string
		render func(*model.Fleet, *model.Source, string) ([]byte, error)
	}{
		{layout.IstioBaseValuesPath, istio.BaseValues},
		{layout.IstiodValuesPath, istio.IstiodValues},
		{layout.EastWestGatewayValuesPath, istio.EastWestGatewayValues},
		{layout.IstioNamespacePath, istio.Namespace},
		{layout.MeshManifestsPath, istio.Manifests},
		{layout.MeshDocsPath, docs.Mesh},
		{layout.MeshLBPath, terraform.MeshLoadBalancer},
	} {
		b, err := r.render(f, src, header)
		if err != nil {
			return nil, fmt.Errorf("mesh cluster %s: %s: %w", src.Cluster.Name, r.path, err)
		}
		if b != nil {
			files[r.path] = b
		}
	}
	return files, nil
}

// FleetWide renders the files of a fleet source that belong to no single
// cluster, with paths relative to out/: the fleet's drawing
// (layout.FleetDocsPath). A one-cluster source has none.
func FleetWide(f *model.Fleet) (layout.Files, error) {
	if f.Single {
		return layout.Files{}, nil
	}
	return layout.Files{layout.FleetDocsPath: docs.Fleet(f)}, nil
}
