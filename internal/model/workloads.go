package model

// A Workload is one of nodegen's script jobs in the cluster, by name: its
// ServiceAccount, ConfigMap, role and binding, DaemonSets, Deployment or
// CronJob, and admission policy and binding are all named after it, in
// WorkloadNamespace where they are namespaced.
type Workload string

// The script workloads.
const (
	// TaintRemover removes a GPU node's startup taint once the GPU
	// Operator has validated the node.
	TaintRemover Workload = "nodegen-taint-remover"
	// NodeCollector deletes the Nodes of cloud VMs that are gone.
	NodeCollector Workload = "nodegen-node-lifecycle"
	// JoinTokenRenewer keeps the join token in Secret Manager fresh.
	JoinTokenRenewer Workload = "nodegen-join-token-renewer"
	// NodeCSRApprover decides the cloud nodes' kubelet client CSRs and
	// sets their VerifiedGroupLabel.
	NodeCSRApprover Workload = "nodegen-node-csr-approver"
)

// WorkloadNamespace is the namespace of every script workload.
const WorkloadNamespace = "kube-system"

// Name is the name of the workload's objects.
func (w Workload) Name() string { return string(w) }

// Namespace is the namespace of the workload's namespaced objects.
func (w Workload) Namespace() string { return WorkloadNamespace }

// User is the user name the API server gives the workload's
// ServiceAccount.
func (w Workload) User() string { return "system:serviceaccount:" + w.Namespace() + ":" + w.Name() }

// TaintRemoverDaemonSet is the name of the GPU group's taint-remover
// DaemonSet.
func (g *NodeGroup) TaintRemoverDaemonSet() string { return TaintRemover.Name() + "-" + g.Name }

// The cloud join path's names: the renewer writes its tokens, the join
// uses them, the approver decides their CSRs, and the day-0 steps do by
// hand what the workloads then do.
const (
	// CloudBootstrapGroup is the bootstrap-token group of the cloud join
	// token (bootstrap token groups match
	// system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]). kubeadm's bindings do
	// not cover it, so the node CSR approver decides its CSRs.
	CloudBootstrapGroup = "system:bootstrappers:nodegen:cloud-nodes"
	// KubeadmNodeBootstrapGroup is the group of kubeadm token create's
	// tokens by default, whose kubelet client CSRs kubeadm's bindings have
	// auto-approved for any node name (kubernetes/kubernetes v1.37.2,
	// cmd/kubeadm/app/constants/constants.go NodeBootstrapTokenAuthGroup).
	KubeadmNodeBootstrapGroup = "system:bootstrappers:kubeadm:default-node-token"
	// KubeletClientSigner is the signer of kubelet client certificates.
	KubeletClientSigner = "kubernetes.io/kube-apiserver-client-kubelet"
	// BootstrapTokenType is the Secret type of a bootstrap token.
	BootstrapTokenType = "bootstrap.kubernetes.io/token"
	// JoinTokenLabelKey=JoinTokenLabelValue marks the tokens the renewer
	// created: the only ones it may delete.
	JoinTokenLabelKey   = "nodegen.dev/join-token"
	JoinTokenLabelValue = "renewer"
	// The reasons the node CSR approver writes into the conditions it adds.
	CSRReasonApproved = "NodegenInstanceVerified"
	CSRReasonDenied   = "NodegenNotAFreshInstance"
	// StuckAnnotation is the annotation the node collector sets on a GPU
	// node stuck initialising (to the time its Ready condition last
	// changed, which names the stuck spell it reported) and removes once
	// the node is no longer stuck; StuckReason is the reason of the
	// Warning Event it writes about the node, once per spell.
	StuckAnnotation = "nodegen.dev/stuck-initialising"
	StuckReason     = "StuckInitialising"
)

// GPUValidationsDir is where the GPU Operator's validator writes its
// status files on a GPU node, which the taint remover reads.
const GPUValidationsDir = "/run/nvidia/validations"
