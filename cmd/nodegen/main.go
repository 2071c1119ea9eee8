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
//	nodegen init    --name N --project P --region R ...         write a minimal source into an empty directory
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
// Exit codes: 0 ok, 1 findings (invalid source, stale output, drift), 2 usage,
// 3 drift could not compare (the cluster unreachable, an input unreadable).
package main

import (
	"os"

	"github.com/nodegen/nodegen/internal/cli"
)

// main runs nodegen as the program of its process: its memory policy
// (the evaluation's collector and memory guard, rendering's budget) is
// pipeline.OwnProcess, chosen by cli.Command.
func main() {
	os.Exit(cli.Command(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
