package gce

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/model"
)

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

// ImageBuildCommands are the commands that make the next image of im's
// family: a builder VM from the base image, script (the family's build
// script, as the shell reads it: a path) run there as root, the VM
// stopped, an image of its disk in the family, the VM deleted.
func ImageBuildCommands(src *model.Source, im model.NodeImage, script string) string {
	builder := im.Family + "-builder"
	zone := src.CloudGroups()[0].Zones[0]
	for _, g := range src.CloudGroups() {
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
`, im.Family, im.Project, builder, zone, ImageBaseProject, ImageBaseFamily(im.Arch), script)
}
