package validate

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/model"
)

// keepsPodsOff reports whether one of taints keeps pods that do not
// tolerate it off the node (NoSchedule or NoExecute; PreferNoSchedule only
// makes the scheduler prefer other nodes).
func keepsPodsOff(taints []model.Taint) bool {
	for _, t := range taints {
		if t.Effect == "NoSchedule" || t.Effect == "NoExecute" {
			return true
		}
	}
	return false
}

// reality checks a group against what GCE, the kubelet and the autoscaler
// accept, beyond the schema.
func (c *checker) reality(g *model.NodeGroup, base []cue.Selector) {
	if !g.Cloud() {
		// Cloud group names are bounded by the GCE names derived from them.
		if msgs := validation.IsValidLabelValue(g.Name); len(msgs) > 0 {
			c.atKey(base, "node group name %q is not a valid label value, yet it becomes %s=%s on the group's nodes and in nodeSelectors: %s; shorten it", g.Name, model.GroupLabel, g.Name, strings.Join(msgs, "; "))
		}
		return
	}
	if g.Kind == model.KindGCEStatic {
		c.staticAutoscaling(g, base)
	}
	c.machine(g, base)
	c.evictionThresholds(g, base)
	c.allocatable(g, base)
	if g.Max > gce.MaxZonalMIGSize {
		c.at(join(base, "max"), "max %d is over the %d VMs a zonal managed instance group holds; add zones or groups instead", g.Max, gce.MaxZonalMIGSize)
	}
	if !gce.ValidImage(g.Image) {
		c.at(join(base, "image"), "%q is not a Compute Engine image reference: use projects/<project>/global/images/<image>, projects/<project>/global/images/family/<family>, global/images/…, family/<family>, <project>/<image>, <image> or the image's https://www.googleapis.com/compute/v1/… URL", g.Image)
	}
}

// staticAutoscaling reports autoscaling options on a gce-static group: the
// autoscaler never sees such a group, so they would do nothing.
func (c *checker) staticAutoscaling(g *model.NodeGroup, base []cue.Selector) {
	o := g.Autoscaling
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"scaleDownUtilizationThreshold", o.ScaleDownUtilizationThreshold != nil},
		{"scaleDownGpuUtilizationThreshold", o.ScaleDownGpuUtilizationThreshold != nil},
		{"scaleDownUnneededTime", !o.ScaleDownUnneededTime.IsZero()},
		{"scaleDownUnreadyTime", !o.ScaleDownUnreadyTime.IsZero()},
		{"maxNodeProvisionTime", !o.MaxNodeProvisionTime.IsZero()},
	} {
		if f.set {
			c.at(join(base, "autoscaling", f.name), "autoscaling options do nothing on a gce-static group: the autoscaler does not manage it; remove it (or make the group kind \"gce\")")
		}
	}
}

// machine checks the machine type, its architecture and its boot disk.
func (c *checker) machine(g *model.NodeGroup, base []cue.Selector) {
	m := g.Shape.Machine
	if m == nil {
		if s := diag.Suggest(g.MachineType, gce.MachineTypeNames()); s != "" {
			c.at(join(base, "machineType"), "unknown machine type %q; did you mean %q?", g.MachineType, s)
		} else {
			c.at(join(base, "machineType"), "unknown machine type %q: not in nodegen's Compute Engine table (internal/gce/data, refresh with hack/gcedata/refresh.sh) and not a custom type (custom-<vCPUs>-<MiB>, n2-custom-…)", g.MachineType)
		}
		return
	}
	if a := m.Arch(); a != g.Arch {
		c.at(c.written(base, "arch", "machineType"), "machine type %s is %s (%s series), not %s: set arch: %q and use an %s image", m.Name, a, strings.ToUpper(m.Series), g.Arch, a, a)
	}
	if msg := m.DiskTypeProblem(g.BootDiskType); msg != "" {
		c.at(c.written(base, "bootDiskType", "machineType"), "boot disk type %s on %s: %s", g.BootDiskType, m.Name, msg)
	}
	// Compute Engine refuses the instance template's custom machine type
	// (gce.MachineShape.CustomProblems: its limits and their source).
	if probs := m.CustomProblems(); len(probs) > 0 {
		c.at(join(base, "machineType"), "custom machine type %s: %s", m.Name, strings.Join(probs, "; "))
	}
}

// region checks that the cluster's region exists.
func (c *checker) region() bool {
	r := c.src.Cluster.GCP.Region
	if _, ok := gce.RegionZones(r); ok {
		return true
	}
	p := sel("cluster", "gcp", "region")
	if s := diag.Suggest(r, gce.Regions()); s != "" {
		c.at(p, "unknown region %q; did you mean %q?", r, s)
	} else {
		c.at(p, "unknown region %q (known: %s)", r, strings.Join(gce.Regions(), ", "))
	}
	return false
}

// zoneExists checks a zone of the cluster's region against the region's zones.
func (c *checker) zoneExists(p []cue.Selector, zone string) {
	zones, ok := gce.RegionZones(c.src.Cluster.GCP.Region)
	if !ok || slices.Contains(zones, zone) {
		return
	}
	c.at(p, "zone %s does not exist; %s has zones %s", zone, c.src.Cluster.GCP.Region, strings.Join(zones, ", "))
}

// evictionThresholds checks evictionHard as the kubelet parses it
// (pkg/kubelet/eviction/helpers.go parseThresholdStatement: a percentage
// must lie between 0% and 100%, a quantity must be positive).
func (c *checker) evictionThresholds(g *model.NodeGroup, base []cue.Selector) {
	if g.Kubelet == nil {
		return
	}
	for _, k := range model.SortedKeys(g.Kubelet.EvictionHard) {
		v := g.Kubelet.EvictionHard[k]
		p := join(base, "kubelet", "evictionHard", k)
		if pct, ok := strings.CutSuffix(v, "%"); ok {
			f, err := strconv.ParseFloat(pct, 64)
			if err == nil && f > 100 {
				c.at(p, "eviction threshold %s is over 100%%: the kubelet refuses to start", v)
			}
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err == nil && q.Sign() <= 0 {
			c.at(p, "eviction threshold %s must be positive: the kubelet refuses to start", v)
		}
	}
}

// allocatable checks that the reservations and the hard eviction
// thresholds leave something for pods on the machine type: the kubelet
// refuses to start when they reach its capacity
// (pkg/kubelet/cm/node_container_manager_linux.go validateNodeAllocatable),
// and the autoscaler would build a template node with nothing allocatable.
func (c *checker) allocatable(g *model.NodeGroup, base []cue.Selector) {
	m := g.Shape.Machine
	if g.Kubelet == nil || m == nil {
		return
	}
	capacity := map[string]*big.Rat{
		"cpu":               big.NewRat(int64(m.VCPUs), 1),
		"memory":            new(big.Rat).SetInt64(int64(m.MemoryMiB) << 20),
		"ephemeral-storage": new(big.Rat).SetInt64(int64(g.BootDiskSizeGb) << 30),
	}
	eviction := map[string]string{"memory": "memory.available", "ephemeral-storage": "nodefs.available"}
	for _, res := range []string{"cpu", "memory", "ephemeral-storage"} {
		total := new(big.Rat)
		var parts []string
		last := []cue.Selector(nil)
		for _, part := range []struct {
			name string
			m    map[string]string
		}{{"kubeReserved", g.Kubelet.KubeReserved}, {"systemReserved", g.Kubelet.SystemReserved}} {
			v, ok := part.m[res]
			if !ok {
				continue
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return // reported by kubelet()
			}
			total.Add(total, ratOf(q))
			parts = append(parts, part.name+" "+v)
			last = join(base, "kubelet", part.name, res)
		}
		if sig, ok := eviction[res]; ok {
			if v, ok := g.Kubelet.EvictionHard[sig]; ok {
				if pct, isPct := strings.CutSuffix(v, "%"); isPct {
					if f, err := strconv.ParseFloat(pct, 64); err == nil && f <= 100 {
						r := new(big.Rat).SetFloat64(f / 100)
						total.Add(total, new(big.Rat).Mul(r, capacity[res]))
					}
				} else if q, err := resource.ParseQuantity(v); err == nil {
					total.Add(total, ratOf(q))
				}
				parts = append(parts, "evictionHard "+sig+" "+v)
				if last == nil {
					last = join(base, "kubelet", "evictionHard", sig)
				}
			}
		}
		if last == nil || total.Cmp(capacity[res]) < 0 {
			continue
		}
		c.at(last, "%s leave no allocatable %s on %s (capacity %s): the kubelet refuses to start; reserve less", strings.Join(parts, " + "), res, m.Name, capacityString(res, m, g))
	}
}

func ratOf(q resource.Quantity) *big.Rat {
	d := q.AsDec()
	r := new(big.Rat).SetInt(d.UnscaledBig())
	scale := d.Scale()
	ten := big.NewInt(10)
	if scale > 0 {
		r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(ten, big.NewInt(int64(scale)), nil)))
	} else if scale < 0 {
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(ten, big.NewInt(int64(-scale)), nil)))
	}
	return r
}

func capacityString(res string, m *gce.MachineShape, g *model.NodeGroup) string {
	switch res {
	case "cpu":
		return fmt.Sprintf("%d vCPUs", m.VCPUs)
	case "memory":
		return fmt.Sprintf("%dMi", m.MemoryMiB)
	}
	return fmt.Sprintf("%dGi boot disk", g.BootDiskSizeGb)
}

// containerImage checks an image reference against the distribution
// reference grammar the container runtime applies (an invalid one leaves
// every pod in InvalidImageName).
func (c *checker) containerImage(p []cue.Selector, ref string) {
	if _, err := reference.ParseNormalizedNamed(ref); err != nil {
		c.at(p, "image %q is not a valid image reference: %v (repository names are lower-case: registry/namespace/name:tag or @sha256:…)", ref, err)
	}
}

// written returns the path of field in the group at base when the user
// wrote it, otherwise the path of fallback (a default has no position of
// its own: point at the field that makes it wrong).
func (c *checker) written(base []cue.Selector, field, fallback string) []cue.Selector {
	p := join(base, field)
	if c.pos.Pos(p...) == c.pos.Pos(base...) {
		return join(base, fallback)
	}
	return p
}
