// Package k8s writes out/k8s: the manifests of nodegen's script workloads
// in the cluster (the taint remover, the node garbage collector, the
// join-token renewer, the node CSR approver and the cloud join path's
// RBAC), each one scriptWorkload, the admission policy that keeps other
// pods off the autoscaler's nodes, and the GPU Operator's Helm values.
package k8s

import (
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// Files renders the cluster's out/k8s files into files: the renewer's
// only with a join token in Secret Manager.
func Files(src *model.Source, files layout.Files) error {
	header := layout.HashHeader(src.Name)
	for _, f := range []struct {
		path   string
		when   bool
		render func(*model.Source, string) ([]byte, error)
	}{
		{layout.AutoscalerNodePath, true, autoscalerNodeFile},
		{layout.TaintRemoverPath, true, taintRemoverFile},
		{layout.NodeLifecyclePath, true, nodeLifecycleFile},
		{layout.JoinTokenRenewerPath, src.Cluster.HasJoinTokenRenewer(), joinTokenRenewerFile},
		{layout.NodeCSRApproverPath, src.Cluster.HasNodeCSRApprover(), nodeCSRApproverFile},
		{layout.GPUOperatorValuesPath, true, gpuOperatorValues},
	} {
		if !f.when {
			continue
		}
		b, err := f.render(src, header)
		if err != nil {
			return err
		}
		files[f.path] = b
	}
	return nil
}
