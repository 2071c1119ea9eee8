// Package layout is the layout of nodegen's output directory: the path of
// every artifact relative to out/, the in-memory file set, and the header
// that tells nodegen's own files from a user's. It imports nothing of
// nodegen, so every package that only needs a path or the header (render,
// outdir, validate, verify, drift, explain, cli) depends on it alone.
package layout

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Files maps a slash-separated path relative to the output directory to
// the file's content.
type Files map[string][]byte

// Paths returns the paths in order.
func (f Files) Paths() []string { return slices.Sorted(maps.Keys(f)) }

// Artifact paths, relative to the output directory.
const (
	TaintRemoverPath      = "k8s/taint-remover.yaml"
	GPUOperatorValuesPath = "k8s/gpu-operator-values.yaml"
	AutoscalerFlagsPath   = "cluster-autoscaler/flags.txt"
	AutoscalerValuesPath  = "cluster-autoscaler/values.yaml"
	// PriorityExpanderPath is the priority expander's ConfigMap, rendered
	// when the expander chain contains "priority".
	PriorityExpanderPath = "cluster-autoscaler/priority-expander.yaml"
	// AutoscalerDockerfilePath and AutoscalerPatchPath are nodegen's build
	// of the autoscaler image, rendered with cluster.autoscaler.patchedImage.
	AutoscalerDockerfilePath = "cluster-autoscaler/image/Dockerfile"
	AutoscalerPatchPath      = "cluster-autoscaler/image/gce-nodegroupfornode.patch"
	// AutoscalerNodePath is the admission policy that keeps every pod but
	// the autoscaler's, nodegen's and the node agents' off the autoscaler's
	// nodes.
	AutoscalerNodePath = "k8s/autoscaler-node.yaml"
	// NodeLifecyclePath is the node garbage collector's manifest.
	NodeLifecyclePath = "k8s/node-lifecycle.yaml"
	// JoinTokenRenewerPath is the join-token renewer's manifest.
	JoinTokenRenewerPath = "k8s/join-token-renewer.yaml"
	// NodeCSRApproverPath is the cloud join path's manifest: the RBAC of
	// the cloud join token's group and the node CSR approver.
	NodeCSRApproverPath = "k8s/node-csr-approver.yaml"
	// DocsPath is the generated description of the node groups.
	DocsPath = "docs/nodegroups.md"
	// OnpremProviderIDPath is the one-time command that gives the nodes
	// outside the MIGs their providerID.
	OnpremProviderIDPath = "onprem/set-provider-id.sh"
	// OnpremLabelNodesPath gives the declared nodes of the onprem groups
	// their group's labels and taints.
	OnpremLabelNodesPath = "onprem/label-onprem-nodes.sh"
	// Day0DocsPath holds the ordered steps from an empty project to a
	// scaling cluster.
	Day0DocsPath = "docs/day0.md"
	// CalicoDir holds the pod network's Calico objects, one file per way
	// of installing Calico: CalicoOperatorPath the tigera-operator's
	// Installation, CalicoManifestPath the FelixConfiguration and IPPool
	// of a manifest install. Apply one of them, never both.
	CalicoDir          = "calico"
	CalicoOperatorPath = CalicoDir + "/operator-installation.yaml"
	CalicoManifestPath = CalicoDir + "/manifest-install.yaml"
)

// Monitoring artifacts: the alerting rules as a Prometheus rule file and
// as a prometheus-operator PrometheusRule, the autoscaler's
// ServiceMonitor, and the cluster's Grafana dashboard in a ConfigMap.
const (
	MonitoringDir                = "monitoring"
	MonitoringRulesPath          = MonitoringDir + "/rules.yaml"
	MonitoringPrometheusRulePath = MonitoringDir + "/prometheusrule.yaml"
	MonitoringServiceMonitorPath = MonitoringDir + "/servicemonitor.yaml"
	MonitoringDashboardPath      = MonitoringDir + "/dashboard.yaml"
)

// Terraform module paths. The module is out/terraform; its metadata reads
// the kube-env and startup script from out/gce/<group>/ with file(), so it
// must stay next to out/gce.
const (
	TerraformDir            = "terraform"
	TerraformMainPath       = TerraformDir + "/main.tf"
	TerraformVariablesPath  = TerraformDir + "/variables.tf"
	TerraformOutputsPath    = TerraformDir + "/outputs.tf"
	TerraformVersionsPath   = TerraformDir + "/versions.tf"
	TerraformIAMPath        = TerraformDir + "/iam.tf"
	TerraformJoinSecretPath = TerraformDir + "/join-secret.tf"
	// TerraformNetworkPath holds the firewall rules and the egress of
	// cluster.gcp.network.
	TerraformNetworkPath = TerraformDir + "/network.tf"
	// TerraformVPNPath holds the HA VPN of cluster.gcp.network.vpn: its
	// gateways, tunnels, Cloud Router and BGP sessions.
	TerraformVPNPath = TerraformDir + "/vpn.tf"
	// TerraformRootDir is the root module that calls the module: the
	// provider, the module block and a commented backend.
	TerraformRootDir      = TerraformDir + "/root"
	TerraformRootMainPath = TerraformRootDir + "/main.tf"
)

// VPNAddressesOutput is the Terraform output (of the module and of its
// root) that lists the HA VPN gateway's interface addresses, interface 0
// first, which the source's haVpnAddresses take.
const VPNAddressesOutput = "vpn_interface_addresses"

// The root module's call of the module, and the names in the module of
// what the image builder VMs need before the rest (day 0 applies them with
// -target): the firewall rule admitting SSH to them, and the Cloud NAT
// (and its router) they reach package repositories through.
const (
	TerraformModuleCall           = "nodegroups"
	TerraformImageBuilderFirewall = "image_builder_ssh"
	TerraformNAT                  = "nat"
)

// Istio mesh artifacts of a cluster that is part of a mesh, relative to
// the cluster's tree: the Helm values for the official charts (base,
// istiod, gateway), the manifests nodegen applies with kubectl (the
// istio-system namespace before the charts, the Istio objects after), and
// the mesh's drawing with the cluster's install steps.
const (
	IstioDir                  = "istio"
	IstioBaseValuesPath       = IstioDir + "/base-values.yaml"
	IstiodValuesPath          = IstioDir + "/istiod-values.yaml"
	EastWestGatewayValuesPath = IstioDir + "/eastwest-gateway-values.yaml"
	IstioNamespacePath        = IstioDir + "/namespace.yaml"
	MeshManifestsPath         = IstioDir + "/mesh.yaml"
	MeshDocsPath              = "docs/mesh.md"
	// MeshLBPath is the east-west gateway's internal load balancer, part
	// of the cluster's Terraform module.
	MeshLBPath = TerraformDir + "/eastwest-gateway-lb.tf"
)

// OnpremVPNDir holds the files of each on-prem VPN gateway host, one
// directory per gateway (cluster.gcp.network.vpn.peerGateways).
const OnpremVPNDir = "onprem/vpn"

// The files of an on-prem VPN gateway host, relative to its directory
// (OnpremVPNGatewayDir): strongSwan's swanctl.conf and one connection file
// per tunnel, charon's settings, FRR's configuration, per tunnel the
// XFRM interface as systemd-networkd files, and the MSS clamp for TCP
// into and out of the tunnels (an nftables table and the systemd unit
// that loads it at boot).
const (
	SwanctlConfFile      = "swanctl.conf"
	SwanctlConnDir       = "conf.d"
	StrongswanConfFile   = "strongswan.conf.d/nodegen.conf"
	FRRConfFile          = "frr.conf"
	SystemdNetworkDir    = "systemd-network"
	MSSClampFile         = "nftables/nodegen-vpn-mss-clamp.nft"
	MSSClampUnitFile     = "systemd-system/nodegen-vpn-mss-clamp.service"
	OnpremVPNInstallFile = "install.sh"
)

// OnpremVPNGatewayDir is the directory of an on-prem VPN gateway's files.
func OnpremVPNGatewayDir(gateway string) string { return OnpremVPNDir + "/" + gateway }

// OnpremJoinDir holds the join script of each onprem group.
const OnpremJoinDir = "onprem/join"

// OnpremJoinPath is the join script of a new server of onprem group
// group (a group name is an RFC 1035 label: a file name as it is).
func OnpremJoinPath(group string) string { return OnpremJoinDir + "/" + group + ".sh" }

// KubeEnvPath is the path of a group's kube-env value.
func KubeEnvPath(group string) string { return "gce/" + group + "/kube-env" }

// StartupScriptPath is the path of a group's startup script.
func StartupScriptPath(group string) string { return "gce/" + group + "/startup-script.sh" }

// ImagesDir holds one node-image build script per image family the cloud
// groups boot from.
const ImagesDir = "images"

// ImageBuildPath is the build script of an image family.
func ImageBuildPath(family string) string { return ImagesDir + "/" + family + "/build.sh" }

// TerraformGroupPath is the file holding a cloud group's instance template
// and zonal MIGs.
func TerraformGroupPath(group string) string { return TerraformDir + "/nodegroup-" + group + ".tf" }

// HeaderLine is the line every generated file carries, without its
// comment marker. Its first words are how nodegen recognises its own files.
// origin (the source directory or file it was generated from) is written
// as it is when it holds only letters, digits, spaces and the punctuation
// of ordinary paths; otherwise it is quoted with every other character
// escaped (\uXXXX), so that nothing in it can end the line or the comment
// around it: neither a line break of any kind, nor "-->" or "*/".
func HeaderLine(origin string) string {
	return "Code generated by nodegen from " + headerOrigin(origin) + ". DO NOT EDIT."
}

// HashHeader is the header as a '#' comment line, for the files whose
// comments start with '#' (shell, YAML, HCL).
func HashHeader(origin string) string { return "# " + HeaderLine(origin) + "\n" }

func headerOrigin(origin string) string {
	plain := func(r rune, prev rune) bool {
		switch {
		case r < utf8.RuneSelf:
			return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
				strings.ContainsRune(" ._/+@,=~", r) || r == '-' && prev != '-'
		default:
			return unicode.IsLetter(r) || unicode.IsDigit(r)
		}
	}
	prev := rune(0)
	safe := origin != ""
	for _, r := range origin {
		if !plain(r, prev) {
			safe = false
			break
		}
		prev = r
	}
	if safe {
		return origin
	}
	var b strings.Builder
	b.WriteByte('"')
	prev = 0
	for i, r := range origin {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(origin[i:]); n == 1 {
				fmt.Fprintf(&b, "\\x%02X", origin[i])
				prev = r
				continue
			}
		}
		if plain(r, prev) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "\\u%04X", r)
		}
		prev = r
	}
	b.WriteByte('"')
	return b.String()
}

// IsGenerated reports whether content carries nodegen's header in its
// first lines (after a shebang, or a Markdown comment).
func IsGenerated(content []byte) bool {
	head := content
	for i := 0; i < 3; i++ {
		line, rest, _ := strings.Cut(string(head), "\n")
		if strings.Contains(line, "Code generated by nodegen ") && strings.Contains(line, "DO NOT EDIT.") {
			return true
		}
		head = []byte(rest)
	}
	return false
}
