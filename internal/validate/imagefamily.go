package validate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// familyUse is one cloud group that boots from an image family, and what
// its cluster's build script bakes into the family's image for it.
type familyUse struct {
	m             secretMember
	cluster       string
	group         string
	version, arch string
	// baked is the rest of what the cluster's build script makes the
	// image hold (model.NodeImage: GPU or CPU, the NVIDIA driver,
	// the images pulled at build); one script serves all the groups
	// of one cluster that boot the family, so only across clusters can
	// it differ.
	baked string
	// pulls are the images the cluster's build script pulls at build.
	pulls []string
}

func (u familyUse) variant() string { return u.version + "/" + u.arch }

// where names the group for a finding about another use: its cluster
// too when that is another one.
func (u familyUse) where(cluster string) string {
	if u.cluster != cluster {
		return fmt.Sprintf("group %s of cluster %s", u.group, u.cluster)
	}
	return "group " + u.group
}

// bakedContents says what the build script of im bakes beside the
// Kubernetes version and architecture and the images it pulls.
func bakedContents(im model.NodeImage) string {
	if !im.GPU {
		return "CPU nodes"
	}
	if d := im.Driver; d != nil {
		return fmt.Sprintf("GPU nodes with NVIDIA driver %s (%s kernel modules) baked", d.Branch, d.KernelModules)
	}
	return "GPU nodes whose driver the GPU Operator installs"
}

// contentDiff says how o's image differs from u's, "" when it does not.
func contentDiff(u, o familyUse) string {
	if u.baked != o.baked {
		return fmt.Sprintf("for %s, while this cluster's makes it for %s", o.baked, u.baked)
	}
	var more, less []string
	for _, p := range o.pulls {
		if !slices.Contains(u.pulls, p) {
			more = append(more, p)
		}
	}
	for _, p := range u.pulls {
		if !slices.Contains(o.pulls, p) {
			less = append(less, p)
		}
	}
	if len(more)+len(less) == 0 {
		return ""
	}
	var parts []string
	if len(more) > 0 {
		parts = append(parts, "pulling "+andList(more))
	}
	if len(less) > 0 {
		parts = append(parts, "not pulling "+andList(less))
	}
	return "with images this cluster's does not pull alike: " + strings.Join(parts, " and ")
}

// familyImages reports the cloud groups that boot from one image family
// (projects/<project>/global/images/family/<family>) but need different
// images of it: another Kubernetes version or another architecture, or,
// across the clusters of a fleet (across), another content of the image
// (what each cluster's build script bakes: GPU or not, the NVIDIA
// driver, the images pulled at build, bakedContents). A family resolves
// to its newest image, the one every new VM of every group naming the
// family boots (Compute Engine, "Image families": "an image family
// always points to the latest image in it"), and nodegen's build script
// (out/images/<family>/build.sh) installs one kubelet and kubeadm version
// for one architecture, so a group of the other version would join with
// the wrong kubelet (or not at all: kubeadm refuses a kubelet newer than
// the control plane) and one of the other architecture would not boot
// (Compute Engine refuses an image whose architecture is not the machine
// type's); gen writes no build script for such a family at
// all (model.BuildableImages) and check has none to compare. Across
// clusters, each cluster's own build script makes the family's next
// image, so the newest is whichever ran last: a GPU node booting the
// other cluster's CPU image has nouveau holding its GPUs, one expecting
// a baked driver (the GPU Operator's driver.enabled false) has none, and
// a node missing its images pulls them at boot. Only the uses in two
// clusters are reported there (each cluster's own check reports its
// own).
func familyImages(members []secretMember, across bool) diag.List {
	uses := map[string][]familyUse{}
	var keys []string
	for _, m := range members {
		images := m.src.NodeImages()
		// What each image's build pulls, decided once per image, not per
		// group that boots it.
		pulls := make([][]string, len(images))
		imageOf := map[string]int{} // "<project>/<family>/<group>": its image
		for i, im := range images {
			for _, name := range im.Groups {
				imageOf[im.Project+"/"+im.Family+"/"+name] = i
			}
		}
		for _, g := range m.src.CloudGroups() {
			project, family, ok := model.ImageFamily(g.Image)
			if !ok {
				continue
			}
			k := project + "/" + family
			if _, seen := uses[k]; !seen {
				keys = append(keys, k)
			}
			u := familyUse{m: m, cluster: m.src.Cluster.Name, group: g.Name, version: m.src.Cluster.NodeVersion(g), arch: g.Arch}
			if i, ok := imageOf[k+"/"+g.Name]; ok {
				if pulls[i] == nil {
					pulls[i] = m.src.PrePulledImages(images[i])
				}
				u.baked, u.pulls = bakedContents(images[i]), pulls[i]
			}
			uses[k] = append(uses[k], u)
		}
	}
	var list diag.List
	for _, k := range keys {
		project, family, _ := strings.Cut(k, "/")
		us := uses[k]
		// The uses of one cluster, version, architecture and contents
		// compare alike: each use is compared with the first of each such
		// kind, and with every use only to name the groups of another
		// version or architecture, so a family of many groups costs
		// groups × kinds, not groups squared.
		var kinds []familyUse
		seen := map[string]bool{}
		for _, u := range us {
			key := strings.Join(append([]string{u.cluster, u.variant(), u.baked}, u.pulls...), "\x00")
			if !seen[key] {
				seen[key] = true
				kinds = append(kinds, u)
			}
		}
		inScope := func(u, o familyUse) bool {
			return (across && o.cluster != u.cluster) || (!across && o.cluster == u.cluster)
		}
		for _, u := range us {
			var others, contents []string
			mixed := false
			for _, o := range kinds {
				switch {
				case !inScope(u, o):
				case o.variant() != u.variant():
					mixed = true
				case across:
					if d := contentDiff(u, o); d != "" && !slices.Contains(contents, d) {
						contents = append(contents, d)
					}
				}
			}
			for _, o := range us {
				if !mixed {
					break
				}
				if inScope(u, o) && o.variant() != u.variant() {
					others = append(others, fmt.Sprintf("%s (Kubernetes %s, %s)", o.where(u.cluster), o.version, o.arch))
				}
			}
			build := "out/" + u.m.src.Tree + layout.ImageBuildPath(family)
			c := &checker{pos: u.m.pos}
			if len(others) > 0 {
				c.at(sel("nodeGroups", u.group, "image"), "image family %s of project %s is also the image of %s, while group %s needs Kubernetes %s on %s: every new VM boots the family's newest image (Compute Engine, image families), which nodegen's build script (%s) makes for one Kubernetes version and one architecture, so a node of the other version would join with the wrong kubelet and kubeadm and one of the other architecture would not boot; give each version and architecture a family of its own",
					family, project, andList(others), u.group, u.version, u.arch, build)
			} else if len(contents) > 0 {
				c.at(sel("nodeGroups", u.group, "image"), "image family %s of project %s is also built by another cluster of the fleet, whose build script makes it %s (this cluster's is %s): every new VM boots the family's newest image (Compute Engine, image families), whichever cluster built it last, so a GPU node may boot an image without its driver or with nouveau holding its GPUs, and a node pulls at boot what its image lacks; give each cluster's groups a family of their own, or make the clusters' images the same",
					family, project, strings.Join(contents, "; "), build)
			}
			list = append(list, c.list...)
		}
	}
	return list
}

// familyOS refuses osDistribution "cos" on a group that boots an image
// family: nodegen's build script makes every family's images from
// Ubuntu (gce.ImageBaseFamily; the script refuses any other OS), and the
// autoscaler sizes a template node's kernel-reserved memory and the OS's
// share of the boot disk by kube-env's os_distribution
// (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// cluster-autoscaler/cloudprovider/gce/gce_reserved.go,
// CalculateKernelReserved, CalculateOSReservedEphemeralStorage; read from
// kube-env by templates.go, extractOperatingSystemDistributionFromKubeEnv),
// so its template would not be the node the MIG makes.
func (c *checker) familyOS(g *model.NodeGroup) {
	_, family, ok := model.ImageFamily(g.Image)
	if !ok || g.OSDistribution == "" || g.OSDistribution == gce.ImageBaseOS {
		return
	}
	c.at(sel("nodeGroups", g.Name, "osDistribution"), "group %s boots image family %s, which nodegen's build script (%s) makes from %s %s (%s's %s) and nothing else, while osDistribution says %q: the autoscaler sizes the template node's reserved memory and the OS's share of the boot disk by kube-env's os_distribution (cluster-autoscaler-1.35.2 cloudprovider/gce/gce_reserved.go), so its template would not be the node; set osDistribution: %q, or boot a fixed image of that OS (not a family)",
		g.Name, family, "out/"+c.src.Tree+layout.ImageBuildPath(family), titleOS(gce.ImageBaseOS), gce.ImageBaseVersion, gce.ImageBaseProject, gce.ImageBaseFamily(g.Arch), g.OSDistribution, gce.ImageBaseOS)
}

func titleOS(os string) string {
	if os == "" {
		return os
	}
	return strings.ToUpper(os[:1]) + os[1:]
}
