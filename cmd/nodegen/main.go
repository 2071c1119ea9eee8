// Command nodegen renders the node groups of a hybrid Kubernetes cluster
// (an on-prem kubeadm control plane with GCE Managed Instance Groups
// scaled by the Cluster Autoscaler) from one CUE source into every
// artifact that must agree: the MIG kube-env, the kubeadm join startup
// script, the GPU startup-taint remover, the GPU Operator values and the
// Cluster Autoscaler's flags and Helm values.
//
// Usage:
//
//	nodegen gen    [--source nodegroups] [--out out]   render into out/
//	nodegen check  [--source nodegroups] [--out out] [--full]   exit 1 with a diff if out/ is stale
//	nodegen vet    [--source nodegroups]               validate only
//	nodegen export [--source nodegroups]               print the resolved model as JSON
//
// Exit codes: 0 ok, 1 findings (invalid source, stale output), 2 usage.
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
