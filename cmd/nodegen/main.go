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
//	nodegen check  [--source nodegroups] [--out out]   exit 1 with a diff if out/ is stale
//	nodegen vet    [--source nodegroups]               validate only
//	nodegen export [--source nodegroups]               print the resolved model as JSON
//
// Exit codes: 0 ok, 1 findings (invalid source, stale output), 2 usage.
package main

import (
	"os"

	"github.com/nodegen/nodegen/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
