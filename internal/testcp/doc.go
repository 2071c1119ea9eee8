// Package testcp runs a real etcd and kube-apiserver on loopback for tests, with an admin kubeconfig, kubectl helpers and ServiceAccount identities.
//
// The binaries are built once per machine by hack/testcp/build.sh (or
// `make testcp`) into a cache folder outside the repository; see
// hack/testcp/README.md. Without them, Start skips the test, unless
// NODEGEN_REQUIRE_TESTCP=1 is set (as in CI), in which case it fails it.
//
// There is no controller-manager, scheduler or kubelet: objects are stored,
// validated, admitted and authorized for real, but nothing reconciles them.
// Deployments create no Pods, namespaces are never finalized, no default
// ServiceAccount is created, and node taints change only when a client
// changes them. The TaintNodesByCondition admission plugin is enabled, as in
// a real cluster, so every new Node gets the taint
// node.kubernetes.io/not-ready:NoSchedule.
package testcp
