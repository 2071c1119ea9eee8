package model

import "slices"

// GPUOperatorChartVersion is the NVIDIA GPU Operator chart release whose
// values nodegen renders (out/k8s/gpu-operator-values.yaml) and whose
// operand images the GPU image families pull at build.
const GPUOperatorChartVersion = "v26.7.0"

// GPUOperatorDriverImageRepository is the repository of the GPU
// Operator's driver container at GPUOperatorChartVersion (its values'
// driver.repository and driver.image), which nodegen's values keep; the
// operator tags it <driver.version>-<the node's OS>.
const GPUOperatorDriverImageRepository = "nvcr.io/nvidia/driver"

// NFDWorkerImageRepository is the repository of the node-feature-discovery
// worker the GPU Operator chart deploys at GPUOperatorChartVersion: its
// subchart node-feature-discovery 0.19.0 (the chart's Chart.yaml, from
// oci://registry.k8s.io/nfd/charts), whose released chart's
// values.yaml has image.repository set to this by the project's release
// script (kubernetes-sigs/node-feature-discovery hack/prepare-release.sh),
// tagged with the chart's appVersion. nodegen's values keep it.
const NFDWorkerImageRepository = "registry.k8s.io/nfd/node-feature-discovery"

// GPUOperatorImage is one operand image of the GPU Operator chart that a
// GPU node runs before its GPUs validate, as the chart's values name it
// (repository, image, version) and nodegen renders it (the version
// pinned in the values, so that what the image pulled at build is what
// the operator runs).
type GPUOperatorImage struct {
	// Key is the values' section: "validator", "devicePlugin", "toolkit".
	Key                        string
	Repository, Image, Version string
}

// Ref is the image reference the operator runs.
func (i GPUOperatorImage) Ref() string { return i.Repository + "/" + i.Image + ":" + i.Version }

// GPUOperatorImages are the operand images of chart v26.7.0 a new GPU
// node runs before its GPUs validate (NVIDIA/gpu-operator v26.7.0
// deployments/gpu-operator/values.yaml):
//   - the validator, whose init containers validate the driver, the
//     toolkit, CUDA and the device plugin (validator.repository and
//     .image; its version defaults to the chart's appVersion, which
//     nodegen pins to the release);
//   - the device plugin, which advertises nvidia.com/gpu (and GPU
//     Feature Discovery, the same image);
//   - the container toolkit, only when the operator installs it
//     (hostDriver false).
//
// The driver container is left out: the operator picks its tag from the
// node's OS (<version>-<os>), which the source does not hold; so are the
// node-feature-discovery worker (the subchart's appVersion) and the DCGM
// exporter (not needed for the GPUs to validate).
func GPUOperatorImages(hostDriver bool) []GPUOperatorImage {
	out := []GPUOperatorImage{
		{Key: "validator", Repository: "nvcr.io/nvidia", Image: "gpu-operator", Version: GPUOperatorChartVersion},
		{Key: "devicePlugin", Repository: "nvcr.io/nvidia", Image: "k8s-device-plugin", Version: "v0.20.0"},
	}
	if !hostDriver {
		out = append(out, GPUOperatorImage{Key: "toolkit", Repository: "nvcr.io/nvidia/k8s", Image: "container-toolkit", Version: "v1.20.0"})
	}
	return out
}

// ContainerToolkitPackageVersion is the apt version of NVIDIA's
// container toolkit (nvidia-container-toolkit from NVIDIA's
// libnvidia-container repository) a baked image installs: the toolkit
// release of the chart's toolkit image (values toolkit.version v1.20.0),
// Debian revision 1.
const ContainerToolkitPackageVersion = "1.20.0-1"

// PrePulledImages are the images the build script of im's family pulls
// into containerd (namespace k8s.io, the kubelet's), in name order: what
// a new node of the family runs before it is usable, pinned by what the
// source holds:
//   - kube-proxy at the control plane's version (kubeadm's kube-proxy
//     DaemonSet runs registry.k8s.io/kube-proxy:v<kubernetesVersion of
//     its ClusterConfiguration>), on every node;
//   - on a GPU family, the taint remover's image (cluster.taintRemover)
//     when a group of it has a startup taint, and the GPU Operator's
//     operand images (GPUOperatorImages).
//
// The sandbox (pause) image is pulled too, by the script itself. The
// CNI's images are not: their registry is the CNI operator's, which the
// source does not hold.
func (s *Source) PrePulledImages(im NodeImage) []string {
	out := []string{"registry.k8s.io/kube-proxy:v" + s.Cluster.ControlPlane()}
	if im.GPU {
		for _, name := range im.Groups {
			if g := s.NodeGroups[name]; g != nil && g.Cloud() && g.StartupTaint != nil && g.HasGPUs() {
				out = append(out, s.Cluster.TaintRemover.Image)
				break
			}
		}
		for _, i := range GPUOperatorImages(s.HostDriver()) {
			out = append(out, i.Ref())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
