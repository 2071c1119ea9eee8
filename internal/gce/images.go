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
