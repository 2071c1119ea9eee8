// Package k8stest proves nodegen's Kubernetes side against a real
// kube-apiserver (internal/testing/testcp): every generated manifest is accepted by
// the server, the taint remover's script does its one job with its own
// ServiceAccount, and the generated ValidatingAdmissionPolicy holds it to
// that job; the join-token renewer's tokens authenticate as kubeadm's node
// bootstrappers, and its ServiceAccount can do nothing else. It has tests
// only.
package k8stest
