package gce

// ImageBaseProject, ImageBaseOS, ImageBaseVersion and ImageBaseFamily
// are the image a node image's builder VM boots from: Ubuntu 24.04 LTS,
// an OS the GPU Operator's driver containers support.
const (
	ImageBaseProject = "ubuntu-os-cloud"
	ImageBaseOS      = "ubuntu"
	ImageBaseVersion = "24.04"
)

// ImageBaseFamily is the builder VM's image family for an architecture.
func ImageBaseFamily(arch string) string { return "ubuntu-2404-lts-" + arch }

// ImageBaseKernelFlavour is the flavour of the kernel the base images
// run: Canonical's images in ubuntu-os-cloud boot the linux-gcp kernel
// (uname -r ends in -gcp), for which Ubuntu builds and signs the
// linux-modules-nvidia-<branch>-server[-open]-gcp packages.
const ImageBaseKernelFlavour = "gcp"
