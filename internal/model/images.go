package model

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/nodegen/nodegen/internal/gce"
)

// imageFamilyRE matches a boot image given as an image family of a
// project: projects/<project>/global/images/family/<family>, optionally
// as a Compute API URL.
var imageFamilyRE = regexp.MustCompile(`^(?:https://(?:www|compute)\.googleapis\.com/compute/v1/)?projects/([a-z][-a-z0-9]{4,28}[a-z0-9])/global/images/family/([a-z]([-a-z0-9]{0,61}[a-z0-9])?)$`)

// ImageFamily returns the project and family of an image given as a
// family, and false for an image named otherwise (one fixed image).
func ImageFamily(image string) (project, family string, ok bool) {
	m := imageFamilyRE.FindStringSubmatch(image)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// NodeImage is one image family the cloud groups boot from, and what its
// nodes need of it.
type NodeImage struct {
	Project, Family string
	// KubernetesVersion is the version of the groups' kubelet and kubeadm.
	KubernetesVersion string
	// Arch is the groups' CPU architecture (amd64 or arm64).
	Arch string
	// GPU: a group with GPUs boots from it.
	GPU bool
	// Groups are the cloud groups that boot from it, in name order.
	Groups []string
	// Driver is the NVIDIA driver a GPU family's image bakes, nil when
	// the GPU Operator installs it (and on a CPU family).
	Driver *BakedDriver
}

// NodeImages returns the image families the cloud groups boot from, in
// family order; a group whose image is not a family is left out. A
// family whose groups disagree on the Kubernetes version or architecture
// is returned once per variant (vet refuses that: validate's familyImages).
func (s *Source) NodeImages() []NodeImage {
	var out []NodeImage
	for _, g := range s.CloudGroups() {
		project, family, ok := ImageFamily(g.Image)
		if !ok {
			continue
		}
		v, arch := s.Cluster.NodeVersion(g), g.Arch
		i := slices.IndexFunc(out, func(n NodeImage) bool {
			return n.Project == project && n.Family == family && n.KubernetesVersion == v && n.Arch == arch
		})
		if i < 0 {
			out = append(out, NodeImage{Project: project, Family: family, KubernetesVersion: v, Arch: arch})
			i = len(out) - 1
		}
		out[i].GPU = out[i].GPU || g.HasGPUs()
		out[i].Groups = append(out[i].Groups, g.Name)
	}
	slices.SortStableFunc(out, func(a, b NodeImage) int {
		if a.Family != b.Family {
			if a.Family < b.Family {
				return -1
			}
			return 1
		}
		return 0
	})
	for i := range out {
		slices.Sort(out[i].Groups)
		if out[i].GPU {
			out[i].Driver = s.Cluster.BakedDriver(out[i].Family)
		}
	}
	return out
}

// BuildableImages returns the images of families whose groups agree on
// the Kubernetes version and architecture (one image serves them all),
// and the families whose groups do not, which get no build script.
func BuildableImages(images []NodeImage) (buildable []NodeImage, mixed []string) {
	count := map[string]int{}
	for _, im := range images {
		count[im.Family]++
	}
	for _, im := range images {
		switch {
		case count[im.Family] == 1:
			buildable = append(buildable, im)
		case !slices.Contains(mixed, im.Family):
			mixed = append(mixed, im.Family)
		}
	}
	return buildable, mixed
}

// ImageBuildCommands are the commands that make the next image of im's
// family: a builder VM from the base image, script (the family's build
// script, as the shell reads it: a path) run there as root, the VM
// stopped, an image of its disk in the family, the VM deleted. With
// cluster.gcp.network the VM runs on the nodes' subnetwork without an
// external IP (a project may have no default network, and an
// organisation policy may forbid external IPs), tagged for the firewall
// rule that admits SSH to it from Identity-Aware Proxy's TCP forwarding,
// through which gcloud compute ssh reaches it (the VPN to the on-prem
// side is not up yet on day 0); without, on the project's default
// network, as gcloud makes it.
func (s *Source) ImageBuildCommands(im NodeImage, script string) string {
	builder := im.Family + "-builder"
	zone := s.CloudGroups()[0].Zones[0]
	for _, g := range s.CloudGroups() {
		if g.Name == im.Groups[0] {
			zone = g.Zones[0]
		}
	}
	network, ssh := "", ""
	c := &s.Cluster
	if n := c.GCP.Network; n != nil {
		network = fmt.Sprintf(" \\\n  --subnet=projects/%s/regions/%s/subnetworks/%s --no-address --tags=%s",
			n.NetworkProject(c), c.GCP.Region, n.Subnetwork, c.ImageBuilderTag())
		ssh = " --tunnel-through-iap"
	}
	return fmt.Sprintf(`gcloud compute instances create %[3]s --project=%[2]s --zone=%[4]s \
  --image-project=%[5]s --image-family=%[6]s --boot-disk-size=20GB%[8]s
gcloud compute ssh %[3]s --project=%[2]s --zone=%[4]s%[9]s -- sudo bash -s < %[7]s
gcloud compute instances stop %[3]s --project=%[2]s --zone=%[4]s
gcloud compute images create %[1]s-$(date +%%Y%%m%%d%%H%%M) --project=%[2]s \
  --family=%[1]s --source-disk=%[3]s --source-disk-zone=%[4]s
gcloud compute instances delete %[3]s --project=%[2]s --zone=%[4]s
`, im.Family, im.Project, builder, zone, gce.ImageBaseProject, gce.ImageBaseFamily(im.Arch), script, network, ssh)
}

// FamilySettings is what one family's build script bakes into the
// image (the source's cluster.imageFamilies.<family>).
type FamilySettings struct {
	// GPUDriver is who installs the NVIDIA driver and toolkit on a GPU
	// family's nodes, nil when the source does not say (the operator).
	GPUDriver *GPUDriver `json:"gpuDriver,omitempty"`
}

// GPUDriver is exactly one of Image (baked) or Operator.
type GPUDriver struct {
	Image    *BakedDriver `json:"image,omitempty"`
	Operator *struct{}    `json:"operator,omitempty"`
}

// BakedDriver is the NVIDIA driver a GPU family's image holds: Ubuntu's
// precompiled, signed kernel modules of Branch for KernelFlavour and the
// matching user space.
type BakedDriver struct {
	Branch string `json:"branch"`
	// KernelModules is "open" or "proprietary".
	KernelModules string `json:"kernelModules"`
	// KernelFlavour is the Ubuntu kernel flavour the modules are built
	// for ("gcp").
	KernelFlavour string `json:"kernelFlavour"`
}

// Kernel module kinds of BakedDriver.KernelModules.
const (
	KernelModulesOpen        = "open"
	KernelModulesProprietary = "proprietary"
)

// ModulesPackage is Ubuntu's meta package of the precompiled, signed
// modules: linux-modules-nvidia-<branch>-server[-open]-<flavour>. It
// depends on the modules built for the flavour's newest kernel and on
// that kernel, so the image boots a kernel its modules were built for.
// (Ubuntu Server documentation, "NVIDIA drivers installation": the
// linux-modules-nvidia-${DRIVER_BRANCH}${SERVER}-${LINUX_FLAVOUR}
// packages, and their -open variants.)
func (d BakedDriver) ModulesPackage() string {
	open := ""
	if d.KernelModules == KernelModulesOpen {
		open = "-open"
	}
	return "linux-modules-nvidia-" + d.Branch + "-server" + open + "-" + d.KernelFlavour
}

// UserSpacePackages are the branch's user-space packages the GPU
// Operator's validator and the device plugin need on the host:
// nvidia-smi and NVML (nvidia-utils) and the CUDA driver library
// (libnvidia-compute).
func (d BakedDriver) UserSpacePackages() []string {
	return []string{"nvidia-utils-" + d.Branch + "-server", "libnvidia-compute-" + d.Branch + "-server"}
}

// BakedDriver returns the driver the image of family bakes, nil when the
// GPU Operator installs it (or the source does not say).
func (c *Cluster) BakedDriver(family string) *BakedDriver {
	f, ok := c.ImageFamilies[family]
	if !ok || f.GPUDriver == nil {
		return nil
	}
	return f.GPUDriver.Image
}

// HostDriver says whether the GPU Operator is to run with a driver and
// toolkit on the host (its values driver.enabled and toolkit.enabled
// false): every image family a GPU group boots from bakes them. A GPU
// group with a fixed image (not a family) does not count; vet refuses a
// source whose GPU families disagree.
func (s *Source) HostDriver() bool {
	baked := false
	for _, g := range s.CloudGroups() {
		if !g.HasGPUs() {
			continue
		}
		_, family, ok := ImageFamily(g.Image)
		if !ok {
			continue
		}
		if s.Cluster.BakedDriver(family) == nil {
			return false
		}
		baked = true
	}
	return baked
}
