package model

import "slices"

// NodeDaemonPods names the DaemonSet pods every node of cloud group g runs
// before any workload pod, each one pod the kubelet's maxPods counts:
//   - kube-proxy and the cluster's CNI agent, on every node;
//   - nodegen's taint remover on a GPU group with a startup taint
//     (out/k8s/taint-remover.yaml);
//   - on a GPU group, the GPU Operator's operands that nodegen's values
//     leave enabled (NVIDIA gpu-operator chart v26.7.0 values.yaml:
//     driver, toolkit, devicePlugin, dcgmExporter, gfd, validator and the
//     node-feature-discovery worker default to enabled; migManager too, and
//     it runs on the nodes whose GPUs support MIG); the driver and the
//     toolkit not when hostDriver (every GPU image bakes them: the values
//     turn both off).
//
// The startup taint is removed only once the operands have validated the
// GPUs, so a maxPods below this list plus one leaves the node unusable.
func NodeDaemonPods(g *NodeGroup, hostDriver bool) []string {
	out := []string{"kube-proxy", "the CNI agent"}
	if g.GPU == nil {
		return out
	}
	if g.StartupTaint != nil {
		out = append(out, "nodegen's taint remover")
	}
	if !hostDriver {
		out = append(out, "nvidia-driver-daemonset", "nvidia-container-toolkit-daemonset")
	}
	out = append(out, "nvidia-device-plugin-daemonset",
		"nvidia-dcgm-exporter", "gpu-feature-discovery", "nvidia-operator-validator", "node-feature-discovery worker")
	if slices.Contains(migCapableGPUs, g.GPU.Type) {
		out = append(out, "nvidia-mig-manager")
	}
	return out
}

// migCapableGPUs are the GCE accelerator types whose GPUs support MIG
// (NVIDIA's MIG user guide, "Supported GPUs": A100, A30, H100, H200, B200
// and GB200), on which the GPU Operator runs its MIG manager.
var migCapableGPUs = []string{
	"nvidia-tesla-a100", "nvidia-a100-80gb", "nvidia-h100-80gb", "nvidia-h100-mega-80gb",
	"nvidia-h200-141gb", "nvidia-b200", "nvidia-gb200",
}

// PodAddresses is how many pod addresses a node's pod range of prefix
// length mask holds: the range less its network, gateway and broadcast
// addresses.
func PodAddresses(mask int) int { return 1<<(32-mask) - 3 }
