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
}

// NodeImages returns the image families the cloud groups boot from, in
// family order; a group whose image is not a family is left out. A
// family whose groups disagree on the Kubernetes version or architecture
// is returned once per variant (vet refuses that).
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
// stopped, an image of its disk in the family, the VM deleted.
func (s *Source) ImageBuildCommands(im NodeImage, script string) string {
	builder := im.Family + "-builder"
	zone := s.CloudGroups()[0].Zones[0]
	for _, g := range s.CloudGroups() {
		if g.Name == im.Groups[0] {
			zone = g.Zones[0]
		}
	}
	return fmt.Sprintf(`gcloud compute instances create %[3]s --project=%[2]s --zone=%[4]s \
  --image-project=%[5]s --image-family=%[6]s --boot-disk-size=20GB
gcloud compute ssh %[3]s --project=%[2]s --zone=%[4]s -- sudo bash -s < %[7]s
gcloud compute instances stop %[3]s --project=%[2]s --zone=%[4]s
gcloud compute images create %[1]s-$(date +%%Y%%m%%d%%H%%M) --project=%[2]s \
  --family=%[1]s --source-disk=%[3]s --source-disk-zone=%[4]s
gcloud compute instances delete %[3]s --project=%[2]s --zone=%[4]s
`, im.Family, im.Project, builder, zone, gce.ImageBaseProject, gce.ImageBaseFamily(im.Arch), script)
}
