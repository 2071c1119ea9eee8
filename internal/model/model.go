// Package model holds the resolved nodegen source: the cluster, its node
// groups, and everything nodegen derives from them (labels, taints, names).
package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Node group kinds.
const (
	KindGCE       = "gce"        // MIGs sized by the autoscaler
	KindGCEStatic = "gce-static" // MIGs of a fixed size
	KindOnPrem    = "onprem"     // declared only; never rendered into cloud artifacts
)

// Well-known label and taint keys.
const (
	// GroupLabel is the node-group identity label nodegen puts on every node.
	GroupLabel = "nodegen.dev/node-group"
	// VerifiedGroupLabel is the node-group label a kubelet cannot set on
	// its own Node: NodeRestriction refuses a kubelet every label under
	// node-restriction.kubernetes.io/, at registration and on update, and
	// its removal (kubernetes/kubernetes v1.37.2,
	// plugin/pkg/admission/noderestriction/admission.go admitNode,
	// getForbiddenLabels). The node CSR approver sets it on a cloud Node
	// once the Compute API showed the Node's VM is an instance of the
	// group's MIG (the autoscaler's first node gets it from the admin on
	// day 0). Every placement and policy nodegen renders for cloud groups
	// selects on it, never on GroupLabel, which any kubelet may set on
	// itself. The join never sets it: kubeadm join with it in
	// --node-labels would fail at the kubelet's registration.
	VerifiedGroupLabel = "node-restriction.kubernetes.io/nodegen-node-group"
	// GPULabel is the Cluster Autoscaler's GCE GPU label.
	GPULabel = "cloud.google.com/gke-accelerator"
	// ZoneLabel, RegionLabel and InstanceTypeLabel are set by the join script
	// and added by the autoscaler to every GCE template node.
	ZoneLabel         = "topology.kubernetes.io/zone"
	RegionLabel       = "topology.kubernetes.io/region"
	InstanceTypeLabel = "node.kubernetes.io/instance-type"
	// StartupTaintPrefix marks a taint the autoscaler treats as a startup taint.
	StartupTaintPrefix = "startup-taint.cluster-autoscaler.kubernetes.io/"
	// DefaultGPUStartupTaintKey is the startup taint GPU groups get by default.
	DefaultGPUStartupTaintKey = StartupTaintPrefix + "gpu-not-ready"
	// GPUResource is the extended resource the NVIDIA device plugin publishes.
	GPUResource = "nvidia.com/gpu"
)

// Source is a whole nodegen source after CUE evaluation.
type Source struct {
	Cluster    Cluster               `json:"cluster"`
	NodeGroups map[string]*NodeGroup `json:"nodeGroups"`

	// Name is the source directory's base name ("nodegroups"), used in
	// generated headers.
	Name string `json:"-"`
	// Origins maps a node group to the source file that defines it,
	// relative to the source's parent ("nodegroups/gpu-t4.cue").
	Origins map[string]string `json:"-"`
	// ClusterOrigin is the source file that defines the cluster, like Origins.
	ClusterOrigin string `json:"-"`
	// Tree is the directory of the cluster's artifacts in out/, with a
	// trailing slash: "" for a one-cluster source, "<cluster>/" for a
	// cluster of a fleet (layout.ClusterDir). Docs name paths with it.
	Tree string `json:"-"`
}

// Cluster describes the hybrid cluster.
type Cluster struct {
	Name              string `json:"name"`
	KubernetesVersion string `json:"kubernetesVersion"`
	// ControlPlaneVersion is the on-prem control plane's version, "" when
	// it is kubernetesVersion (see ControlPlane).
	ControlPlaneVersion string `json:"controlPlaneVersion,omitempty"`
	// AcceptUnknownKubernetesVersion turns vet's errors about a version
	// nodegen's table of Kubernetes releases does not know into warnings.
	AcceptUnknownKubernetesVersion bool   `json:"acceptUnknownKubernetesVersion,omitempty"`
	ControlPlaneEndpoint           string `json:"controlPlaneEndpoint"`
	// ControlPlaneNodes are the control plane's Nodes by name.
	ControlPlaneNodes map[string]FixedNode `json:"controlPlaneNodes,omitempty"`
	CACertHashes      []string             `json:"caCertHashes"`
	JoinToken         JoinToken            `json:"joinToken"`
	GCP               GCP                  `json:"gcp"`
	Autoscaler        Autoscaler           `json:"autoscaler"`
	TaintRemover      struct {
		Image string `json:"image"`
	} `json:"taintRemover"`
	NodeLifecycle NodeLifecycle `json:"nodeLifecycle"`
	// ImageFamilies is what the build scripts bake into the images of
	// the families named, by family.
	ImageFamilies map[string]FamilySettings `json:"imageFamilies,omitempty"`
	Rollout       Rollout                   `json:"rollout"`
	// OnpremProviderID is what nodegen does about the providerID of the
	// nodes outside the MIGs: OnpremProviderIDUnmanaged or OnpremProviderIDNone.
	OnpremProviderID string `json:"onpremProviderID"`
	// NodeCIDRMaskSize is the prefix length of each node's pod range.
	NodeCIDRMaskSize int `json:"nodeCidrMaskSize"`
	// PodNetwork is the CNI between the nodes, nil when the source has none.
	PodNetwork *PodNetwork `json:"podNetwork,omitempty"`
}

// NodeLifecycle holds the node garbage collector's settings.
type NodeLifecycle struct {
	// NotReadyGracePeriod is a Go duration: how long a cloud node whose VM
	// exists may be not Ready before the collector logs it as stuck, and
	// how long a Node without a Ready condition is left alone.
	NotReadyGracePeriod Duration `json:"notReadyGracePeriod"`
	// RemoveStuckGPUNodes: the collector deletes, through its MIG, the VM
	// of a Ready node of an autoscaled GPU group that still carries its
	// startup taint past its init budget's time to be ready (InitBudget)
	// without advertising its GPUs; otherwise it only logs such a node.
	RemoveStuckGPUNodes bool `json:"removeStuckGPUNodes"`
}

// JoinToken says where the bootstrap token is read at boot.
type JoinToken struct {
	SecretManager *SecretRef `json:"secretManager,omitempty"`
	MetadataKey   string     `json:"metadataKey,omitempty"`
	// TTL and RenewEvery are Go durations; see Renewal.
	TTL        Duration `json:"ttl"`
	RenewEvery Duration `json:"renewEvery"`
}

// SecretRef names a Secret Manager secret version.
type SecretRef struct {
	Secret  string `json:"secret"`
	Version string `json:"version"`
	// Terraform is what out/terraform does about the secret: one of the
	// JoinSecret* constants.
	Terraform string `json:"terraform"`
}

// What out/terraform does about the join token's Secret Manager secret.
const (
	JoinSecretCreate = "create" // create the secret (no value) and grant its IAM
	JoinSecretIAM    = "iam"    // grant IAM on a secret managed elsewhere
	JoinSecretNone   = "none"   // neither: the user manages both
)

// GCP is the project and region of the cloud node groups.
type GCP struct {
	Project string `json:"project"`
	Region  string `json:"region"`
	// Network is the cloud nodes' VPC network, nil when the source leaves
	// it to the Terraform module's variables.
	Network *GCPNetwork `json:"network,omitempty"`
	// TerraformState is the root module's gcs backend, nil for local
	// state.
	TerraformState *TerraformState `json:"terraformState,omitempty"`
	// IAMConditionByClusterPrefix lets the autoscaler's IAM condition fall
	// back to the cluster's name prefix when naming every group is over
	// the cap.
	IAMConditionByClusterPrefix bool `json:"iamConditionByClusterPrefix,omitempty"`
}

// GCPNetwork is the VPC network of the cloud nodes and what nodegen renders
// of it: firewall rules from the on-prem ranges and between the nodes, and
// the nodes' egress.
type GCPNetwork struct {
	// Create is set when nodegen creates the network and its subnetwork
	// (in the root module).
	Create       bool     `json:"create,omitempty"`
	Name         string   `json:"name"`
	Subnetwork   string   `json:"subnetwork"`
	Project      string   `json:"project,omitempty"`
	OnpremRanges []string `json:"onpremRanges"`
	CNIPorts     []string `json:"cniPorts,omitempty"`
	// MetricsPorts are the cloud nodes' host-network exporters' ports a
	// Prometheus on the on-prem side scrapes.
	MetricsPorts []string `json:"metricsPorts,omitempty"`
	// MTU is the VPC network's MTU, OnpremNodeMTU the on-prem nodes' NIC MTU.
	MTU           int    `json:"mtu"`
	OnpremNodeMTU int    `json:"onpremNodeMTU"`
	Egress        string `json:"egress"`
	// SubnetworkRange is the subnetwork's primary IPv4 range, "" unset.
	SubnetworkRange string `json:"subnetworkRange,omitempty"`
	// VPN is the HA VPN to the on-prem side, nil when the source has none.
	VPN *VPN `json:"vpn,omitempty"`
}

// TerraformState is a gcs backend of the root module.
type TerraformState struct {
	Bucket string `json:"bucket"`
	Prefix string `json:"prefix,omitempty"`
}

// StatePrefix is the backend's prefix: the source's, or
// "nodegen/<cluster name>".
func (c *Cluster) StatePrefix() string {
	if s := c.GCP.TerraformState; s != nil && s.Prefix != "" {
		return s.Prefix
	}
	return "nodegen/" + c.Name
}

// Egress choices of GCPNetwork.Egress.
const (
	EgressCloudNAT            = "cloud-nat"
	EgressPrivateGoogleAccess = "private-google-access"
)

// IAPTCPForwardingRange is the range Identity-Aware Proxy's TCP forwarding
// connects to a VM from: a firewall rule must admit it to the VM's port
// (Google Cloud, IAP, "Using IAP for TCP forwarding": "allow ingress
// traffic from the IP range 35.235.240.0/20").
const IAPTCPForwardingRange = "35.235.240.0/20"

// NetworkProject is the project of the network: its own, or the cluster's.
func (n *GCPNetwork) NetworkProject(c *Cluster) string {
	if n.Project != "" {
		return n.Project
	}
	return c.GCP.Project
}

// Autoscaler holds the Cluster Autoscaler's global settings.
type Autoscaler struct {
	NodeGroup                        string   `json:"nodeGroup"`
	Version                          string   `json:"version,omitempty"`
	Namespace                        string   `json:"namespace"`
	Expander                         string   `json:"expander"`
	BalanceSimilarNodeGroups         *bool    `json:"balanceSimilarNodeGroups,omitempty"`
	ScaleDownUtilizationThreshold    float64  `json:"scaleDownUtilizationThreshold"`
	ScaleDownGpuUtilizationThreshold float64  `json:"scaleDownGpuUtilizationThreshold"`
	ScaleDownUnneededTime            Duration `json:"scaleDownUnneededTime"`
	ScaleDownUnreadyTime             Duration `json:"scaleDownUnreadyTime"`
	MaxNodeProvisionTime             Duration `json:"maxNodeProvisionTime"`
	Caps                             *Caps    `json:"caps,omitempty"`
	// SingleZone says the autoscaler's group has one zone on purpose.
	SingleZone bool `json:"singleZone,omitempty"`
	// MaxSpotFallbackDelay is a Go duration: the longest worst-case delay
	// before a preferred spot group falls back; unset means no bound.
	MaxSpotFallbackDelay Duration `json:"maxSpotFallbackDelay,omitzero"`
	// AcceptUnknownVersion says the source uses, on purpose, an image tag
	// nodegen's table of releases does not know or one for another
	// Kubernetes minor than the control plane's.
	AcceptUnknownVersion bool `json:"acceptUnknownVersion,omitempty"`
	// PatchedImage, when set, runs nodegen's build of the release with its
	// patch of the GCE provider (AutoscalerPatchedReleases).
	PatchedImage *PatchedImage `json:"patchedImage,omitempty"`
	// NodeAgents are the pods, besides kube-proxy's, the chart's and
	// nodegen's own workloads, that the autoscaler's nodes admit: the
	// node agents every node runs (the CNI agent).
	NodeAgents []PodIdentity `json:"nodeAgents"`
}

// A PodIdentity names the pods of one ServiceAccount: their namespace and
// their spec.serviceAccountName.
type PodIdentity struct {
	Namespace      string `json:"namespace"`
	ServiceAccount string `json:"serviceAccount"`
}

// AutoscalerServiceAccount is the name of the ServiceAccount the Cluster
// Autoscaler chart creates and runs its pods as: the rendered values set
// it (rbac.serviceAccount.name), and the autoscaler node's admission
// policy admits it there.
const AutoscalerServiceAccount = AutoscalerFullname

// AutoscalerNodePods are the pods the autoscaler's nodes admit, in order:
// the chart's, nodegen's workloads that run there (the node CSR approver,
// the node garbage collector, the join-token renewer), kube-proxy's and
// the source's other node agents.
func (c *Cluster) AutoscalerNodePods() []PodIdentity {
	out := []PodIdentity{{Namespace: c.Autoscaler.Namespace, ServiceAccount: AutoscalerServiceAccount}}
	for _, w := range []Workload{NodeCSRApprover, NodeCollector, JoinTokenRenewer} {
		if (w == NodeCSRApprover && !c.HasNodeCSRApprover()) || (w == JoinTokenRenewer && !c.HasJoinTokenRenewer()) {
			continue
		}
		out = append(out, PodIdentity{Namespace: w.Namespace(), ServiceAccount: w.Name()})
	}
	out = append(out, KubeProxy)
	for _, a := range c.Autoscaler.NodeAgents {
		if a != KubeProxy {
			out = append(out, a)
		}
	}
	return out
}

// KubeProxy is kubeadm's kube-proxy DaemonSet, which runs on every node
// as the ServiceAccount kube-proxy in kube-system (kubernetes/kubernetes
// v1.37.2, cmd/kubeadm/app/phases/addons/proxy/manifests.go).
var KubeProxy = PodIdentity{Namespace: "kube-system", ServiceAccount: "kube-proxy"}

// PatchedImage is where the user pushes nodegen's build of the autoscaler.
type PatchedImage struct {
	Repository string `json:"repository"`
}

// NodeGroup is one group of identical nodes.
type NodeGroup struct {
	Name        string            `json:"name"`
	Kind        string            `json:"kind"`
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels"`
	Taints      []Taint           `json:"taints"`
	GPU         *GPU              `json:"gpu,omitempty"`
	Priority    *int              `json:"priority,omitempty"`
	Zones       []string          `json:"zones,omitempty"`
	// KubernetesVersion is a cloud group's own version, "" when it joins
	// with the cluster's (see Cluster.NodeVersion).
	KubernetesVersion string             `json:"kubernetesVersion,omitempty"`
	MachineType       string             `json:"machineType,omitempty"`
	Capacity          *Capacity          `json:"capacity,omitempty"`
	Arch              string             `json:"arch,omitempty"`
	Image             string             `json:"image,omitempty"`
	OSDistribution    string             `json:"osDistribution,omitempty"`
	BootDiskSizeGb    int                `json:"bootDiskSizeGb,omitempty"`
	BootDiskType      string             `json:"bootDiskType,omitempty"`
	Spot              bool               `json:"spot,omitempty"`
	LocalSSDCount     int                `json:"localSsdCount,omitempty"`
	Min               int                `json:"min"`
	Max               int                `json:"max"`
	Kubelet           *Kubelet           `json:"kubelet,omitempty"`
	Autoscaling       AutoscalingOptions `json:"autoscaling"`
	StartupTaint      *Taint             `json:"startupTaint,omitempty"`
	// Autohealing is a gce-static group's (nil for the others).
	Autohealing *Autohealing `json:"autohealing,omitempty"`
	Locality    *Locality    `json:"locality,omitempty"`
	// Nodes are an onprem group's Nodes by name.
	Nodes map[string]FixedNode `json:"nodes,omitempty"`

	// Derived by Resolve.

	// Shape is what one VM of the group has (Shape).
	Shape Shape `json:"-"`

	// NodeLabels are the labels every node of the group carries from the
	// moment it registers and that the autoscaler's template declares:
	// Labels plus the identity label and, for GPU groups, the GPU label.
	NodeLabels map[string]string `json:"nodeLabels"`
}

// Taint is a node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Effect string `json:"effect"`
}

// String renders the taint as key=value:Effect, the form kube-env needs
// (an empty value stays "key=:Effect").
func (t Taint) String() string { return t.Key + "=" + t.Value + ":" + t.Effect }

// GPU describes the GPUs of each node.
type GPU struct {
	Type    string      `json:"type"`
	Count   int         `json:"count"`
	Sharing *GPUSharing `json:"sharing,omitempty"`
}

// Capacity overrides the vCPUs and memory nodegen's machine-type table
// gives a group's machine type (Shape.CPU and Shape.MemoryBytes).
type Capacity struct {
	CPU    int    `json:"cpu"`
	Memory string `json:"memory"` // a binary-unit quantity, e.g. "30Gi"
}

// Kubelet holds kubelet reservations.
type Kubelet struct {
	KubeReserved   map[string]string `json:"kubeReserved"`
	SystemReserved map[string]string `json:"systemReserved"`
	EvictionHard   map[string]string `json:"evictionHard"`
	// MaxPods is the kubelet's maxPods (the schema defaults it to 110).
	MaxPods int `json:"maxPods"`
	// ShutdownGracePeriod and ShutdownGracePeriodCriticalPods are Go
	// durations, zero when the source leaves them unset.
	ShutdownGracePeriod             Duration `json:"shutdownGracePeriod,omitzero"`
	ShutdownGracePeriodCriticalPods Duration `json:"shutdownGracePeriodCriticalPods,omitzero"`
}

// AutoscalingOptions are per-group autoscaler overrides.
type AutoscalingOptions struct {
	ScaleDownUtilizationThreshold    *float64 `json:"scaleDownUtilizationThreshold,omitempty"`
	ScaleDownGpuUtilizationThreshold *float64 `json:"scaleDownGpuUtilizationThreshold,omitempty"`
	ScaleDownUnneededTime            Duration `json:"scaleDownUnneededTime,omitzero"`
	ScaleDownUnreadyTime             Duration `json:"scaleDownUnreadyTime,omitzero"`
	MaxNodeProvisionTime             Duration `json:"maxNodeProvisionTime,omitzero"`
}

// Resolve fills in what nodegen derives from the source: the GPU groups'
// default startup taint, every group's NodeLabels and machine Shape.
func (s *Source) Resolve() {
	for _, g := range s.NodeGroups {
		if g.Labels == nil {
			g.Labels = map[string]string{}
		}
		if g.Taints == nil {
			g.Taints = []Taint{}
		}
		if g.GPU != nil && g.StartupTaint == nil && g.Kind != KindOnPrem {
			g.StartupTaint = &Taint{Key: DefaultGPUStartupTaintKey, Value: "true", Effect: "NoSchedule"}
		}
		g.NodeLabels = make(map[string]string, len(g.Labels)+2)
		for k, v := range g.Labels {
			g.NodeLabels[k] = v
		}
		g.NodeLabels[GroupLabel] = g.Name
		if g.GPU != nil && g.Cloud() {
			g.NodeLabels[GPULabel] = g.GPU.Type
		}
		g.resolveShape()
		g.resolveCapacity()
		g.resolveLocality()
	}
}

// Groups returns the node groups sorted by name.
func (s *Source) Groups() []*NodeGroup {
	out := make([]*NodeGroup, 0, len(s.NodeGroups))
	for _, g := range s.NodeGroups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *NodeGroup) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Cloud reports whether the group is rendered into GCE artifacts.
func (g *NodeGroup) Cloud() bool { return g.Kind == KindGCE || g.Kind == KindGCEStatic }

// Autoscaled reports whether the Cluster Autoscaler sizes the group.
func (g *NodeGroup) Autoscaled() bool { return g.Kind == KindGCE }

// JoinTaints are the taints the node registers with: the group's taints,
// then its startup taint.
func (g *NodeGroup) JoinTaints() []Taint {
	out := slices.Clone(g.Taints)
	if g.StartupTaint != nil {
		out = append(out, *g.StartupTaint)
	}
	return out
}

// BaseInstanceName is the prefix of the group's VM names ("<cluster>-<group>").
func (c *Cluster) BaseInstanceName(g *NodeGroup) string { return c.Name + "-" + g.Name }

// TemplatePrefix is the name_prefix of the group's instance templates.
func (c *Cluster) TemplatePrefix(g *NodeGroup) string { return c.Name + "-" + g.Name + "-" }

// NATName is the name of the cluster's Cloud NAT (and of its router).
func (c *Cluster) NATName() string { return c.Name + "-nat" }

// ImageBuilderTag is the network tag of the image builder VMs, which the
// firewall rule admitting SSH to them targets. No name of a MIG of the
// cluster is shorter than "<cluster>-<group>-<zone>", so the tag and the
// rule's name ImageBuilderFirewallName fit GCE's 63 characters whenever
// every MIG name does.
func (c *Cluster) ImageBuilderTag() string { return c.Name + "-builder" }

// ImageBuilderFirewallName is the name of the firewall rule admitting SSH
// to the image builder VMs.
func (c *Cluster) ImageBuilderFirewallName() string { return c.Name + "-builder-ssh" }

// MIGName is the name of the group's zonal MIG in zone.
func (c *Cluster) MIGName(g *NodeGroup, zone string) string {
	return c.Name + "-" + g.Name + "-" + zone
}

// MIGURL is the instance-group URL the autoscaler's --nodes flag takes.
func (c *Cluster) MIGURL(g *NodeGroup, zone string) string {
	return fmt.Sprintf("https://www.googleapis.com/compute/v1/projects/%s/zones/%s/instanceGroups/%s",
		c.GCP.Project, zone, c.MIGName(g, zone))
}

// AutoscalerImageTag is the Cluster Autoscaler image tag: the configured
// version, or DefaultAutoscalerTag of the minor of the control plane's
// Kubernetes version (the autoscaler's minor follows the API server it
// talks to).
func (c *Cluster) AutoscalerImageTag() string {
	if c.Autoscaler.Version != "" {
		return c.Autoscaler.Version
	}
	parts := strings.SplitN(c.ControlPlane(), ".", 3)
	if len(parts) < 2 {
		return ""
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil || parts[0] != "1" {
		return ""
	}
	return DefaultAutoscalerTag(minor)
}

// SortedKeys returns the keys of m in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
