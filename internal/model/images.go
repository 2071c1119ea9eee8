package model

import (
	"regexp"
	"slices"
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
}

// NodeImages returns the image families the cloud groups boot from, in
// family order; a group whose image is not a family is left out; hasGPUs
// says whether a group's VMs have GPUs. A
// family whose groups disagree on the Kubernetes version or architecture
// is returned once per variant (vet refuses that).
func (s *Source) NodeImages(hasGPUs func(*NodeGroup) bool) []NodeImage {
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
		out[i].GPU = out[i].GPU || hasGPUs(g)
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
