// Package testcp runs a real etcd and kube-apiserver on loopback for tests, with an admin kubeconfig, kubectl helpers and ServiceAccount identities.
package testcp
