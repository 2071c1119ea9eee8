// Command nodegen renders the node groups of a hybrid Kubernetes cluster
// (an on-prem kubeadm control plane with GCE Managed Instance Groups
// scaled by the Cluster Autoscaler) from one CUE source into every
// artifact that must agree: each cloud group's kube-env and kubeadm join
// startup script, the Terraform module of the instance templates, MIGs,
// IAM and join secret, the in-cluster manifests (node CSR approver,
// join-token renewer, node garbage collector, GPU startup-taint remover),
// the GPU Operator values, the Cluster Autoscaler's flags, Helm values and
// priority expander, the on-prem providerID script, and the docs (the
// groups and the day-0 steps); for a mesh, the Istio values and manifests.
// nodegen --help lists each file.
//
// Usage:
//
//	nodegen gen     [--source nodegroups] [--out out]           render into out/
//	nodegen check   [--source nodegroups] [--out out] [--full]  exit 1 with a diff if out/ is stale
//	nodegen vet     [--source nodegroups]                       validate only
//	nodegen export  [--source nodegroups]                       print the resolved model as JSON
//	nodegen docs    [--schema]                                  the groups' docs, or the source format reference
//	nodegen explain -f workload.yaml                            would the autoscaler add a node for these pods
//	nodegen drift   [--nodes F | --kubeconfig F]                does the cluster still match the source
//	nodegen rollout [--nodes F | --kubeconfig F] [--yes]        replace cloud nodes made from an older source
//	nodegen version                                             version, VCS revision and Go version
//
// Exit codes: 0 ok, 1 findings (invalid source, stale output, drift), 2 usage.
package main

import (
	"os"
	"runtime/debug"

	"github.com/nodegen/nodegen/internal/build"
	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/source"
)

func main() {
	// nodegen runs once and exits. While the source is evaluated, most of
	// its heap is the CUE evaluation, live until the source is decoded:
	// letting the heap grow to 2.5× the live data between collections
	// (Go's default: 2×) saves about a tenth of the evaluation's CPU time
	// for about a sixth more of its memory. Rendering then runs within
	// the memory the evaluation needed (build.BudgetMemory). GOGC in the
	// environment still decides (docs/performance.md).
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(150)
	}
	// Stop a runaway evaluation with a message (NODEGEN_MAX_MEMORY_MIB).
	source.EnforceMemoryLimit = true
	// Render within the memory the evaluation needed, collecting garbage
	// only when the process reaches it (build.BudgetMemory).
	build.BudgetMemory = true
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
