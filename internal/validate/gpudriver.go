package validate

import (
	"strconv"
	"strings"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/model"
)

// imageFamilies checks cluster.imageFamilies: each names a family a
// cloud group boots from; a gpuDriver is on a family with GPU groups and
// is exactly one of image or operator; a baked driver's kernel flavour
// is the base image's and its branch and modules drive the GPUs of every
// group of the family (gce.DriverRefusal); and every GPU family of the
// cluster makes the same choice, since the GPU Operator's values
// (driver.enabled, toolkit.enabled) hold for all its nodes.
func (c *checker) imageFamilies() {
	cl := &c.src.Cluster
	groupsOf := map[string][]*model.NodeGroup{}
	for _, g := range c.src.CloudGroups() {
		if _, family, ok := model.ImageFamily(g.Image); ok {
			groupsOf[family] = append(groupsOf[family], g)
		}
	}
	for _, name := range model.SortedKeys(cl.ImageFamilies) {
		f := cl.ImageFamilies[name]
		p := sel("cluster", "imageFamilies", name)
		groups := groupsOf[name]
		if len(groups) == 0 {
			c.atKey(p, "no cloud group boots from image family %s (an image projects/<project>/global/images/family/%s); remove it, or correct the name", name, name)
			continue
		}
		d := f.GPUDriver
		if d == nil {
			continue
		}
		dp := join(p, "gpuDriver")
		if (d.Image == nil) == (d.Operator == nil) {
			c.at(dp, "set exactly one of image or operator")
			continue
		}
		var gpu []*model.NodeGroup
		for _, g := range groups {
			if g.HasGPUs() {
				gpu = append(gpu, g)
			}
		}
		if len(gpu) == 0 {
			c.at(dp, "image family %s has no group with GPUs (%s boot from it): it gets no NVIDIA driver either way; remove gpuDriver", name, groupNames(groups))
			continue
		}
		b := d.Image
		if b == nil {
			continue
		}
		ip := join(dp, "image")
		if b.KernelFlavour != gce.ImageBaseKernelFlavour {
			c.at(join(ip, "kernelFlavour"), "the image's kernel is of the %q flavour (the builder VM boots %s's %s, which runs linux-%s), and %s holds modules for %q kernels only, which it would not load; remove kernelFlavour",
				gce.ImageBaseKernelFlavour, gce.ImageBaseProject, gce.ImageBaseFamily(groups[0].Arch), gce.ImageBaseKernelFlavour, b.ModulesPackage(), b.KernelFlavour)
		}
		branch, err := strconv.Atoi(b.Branch)
		if err != nil {
			continue // the schema's pattern
		}
		open := b.KernelModules == model.KernelModulesOpen
		for _, g := range gpu {
			if g.GPU == nil {
				continue // reported where the machine type's GPUs are checked
			}
			arch := gce.GPUArchitecture(g.GPU.Type)
			why := gce.DriverRefusal(arch, branch, open)
			if why == "" {
				continue
			}
			at := join(ip, "branch")
			if strings.Contains(why, "kernelModules") {
				at = join(ip, "kernelModules")
			}
			c.at(at, "driver branch %s with %s kernel modules does not drive the %s GPUs (%s) of node group %s, which boots from image family %s: %s", b.Branch, b.KernelModules, g.GPU.Type, arch, g.Name, name, why)
		}
	}
	c.mixedGPUDrivers(groupsOf)
}

// mixedGPUDrivers refuses a baked driver in one GPU family beside a GPU
// family whose driver the GPU Operator installs: the operator's values
// turn its driver and toolkit on or off for every GPU node, so either
// the second family's nodes would get no driver, or the operator's
// driver DaemonSet would run over the baked one.
func (c *checker) mixedGPUDrivers(groupsOf map[string][]*model.NodeGroup) {
	var baked, operator []string
	for _, family := range model.SortedKeys(groupsOf) {
		hasGPU := false
		for _, g := range groupsOf[family] {
			hasGPU = hasGPU || g.HasGPUs()
		}
		switch {
		case !hasGPU:
		case c.src.Cluster.BakedDriver(family) != nil:
			baked = append(baked, family)
		default:
			operator = append(operator, family)
		}
	}
	if len(operator) == 0 {
		return
	}
	for _, family := range baked {
		var groups []string
		for _, g := range groupsOf[operator[0]] {
			if g.HasGPUs() {
				groups = append(groups, g.Name)
			}
		}
		c.at(sel("cluster", "imageFamilies", family, "gpuDriver", "image"),
			"image family %s bakes the NVIDIA driver, but the GPU Operator installs it on the nodes of image family %s (node groups %s): the operator's values (driver.enabled, toolkit.enabled) hold for every GPU node, so an operator-managed driver would run over this baked one, or %s's nodes would get none; give every GPU family the same gpuDriver",
			family, operator[0], strings.Join(groups, ", "), operator[0])
	}
}

// groupNames lists groups' names.
func groupNames(gs []*model.NodeGroup) string {
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = g.Name
	}
	return strings.Join(names, ", ")
}

// onpremHostDriverWarnings: when every GPU image bakes the driver, the
// GPU Operator runs with driver.enabled and toolkit.enabled false for
// every node, the on-prem GPU servers too.
func (c *checker) onpremHostDriverWarnings() {
	if !c.src.HostDriver() {
		return
	}
	for _, g := range c.src.Groups() {
		if g.Kind != model.KindOnPrem || g.GPU == nil {
			continue
		}
		c.at(sel("nodeGroups", g.Name, "gpu"), "warning: every GPU image family bakes the NVIDIA driver, so the GPU Operator installs no driver or container toolkit on any node (driver.enabled and toolkit.enabled false): the servers of onprem group %s need both installed on the host, or their GPUs never validate", g.Name)
	}
}
