// Package testcp runs a real etcd and kube-apiserver on loopback for tests, with an admin kubeconfig, kubectl helpers, ServiceAccount and kubelet identities, and, with Options.Production, the API server configured as kubeadm configures it (Node,RBAC authorization, NodeRestriction, kubeadm's bootstrap-token bindings).
package testcp
