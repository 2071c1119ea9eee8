package validate

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/model"
)

// autoscalerRelease judges the autoscaler's image tag by nodegen's table of
// releases (model.AutoscalerReleases). Errors: a release that stops
// scaling while a node has no providerID its GCE provider can parse, with
// cluster.onpremProviderID "none", which leaves the control plane and the
// on-prem nodes without one; a tag the table does not know, and a minor
// other than the control plane's, unless cluster.autoscaler.
// acceptUnknownVersion says the source means it (then both are warnings).
// Warnings: a .0 release of a line with newer patches.
func (c *checker) autoscalerRelease(warnings bool) {
	cl := &c.src.Cluster
	tag := cl.AutoscalerImageTag()
	at, field := sel("cluster", "kubernetesVersion"), "kubernetesVersion"
	if cl.ControlPlaneVersion != "" {
		at, field = sel("cluster", "controlPlaneVersion"), "controlPlaneVersion"
	}
	pinned, by := "the default image tag "+tag, "the default for "+field+" "+cl.ControlPlane()
	if cl.Autoscaler.Version != "" {
		at, pinned, by = sel("cluster", "autoscaler", "version"), "cluster.autoscaler.version "+tag, "cluster.autoscaler.version"
	}
	if cl.Autoscaler.Version == "" {
		if v, err := model.ParseKubeVersion(cl.ControlPlane()); err != nil || !v.Supported() {
			return // the version has its own finding, and the default tag follows it
		}
	}
	rel, err := model.LookupAutoscalerRelease(tag)
	if err != nil {
		if !warnings {
			c.at(at, "%v", err)
		}
		return
	}
	accept := cl.Autoscaler.AcceptUnknownVersion
	if accept && !warnings && rel.Known {
		if minor, ok := kubernetesMinor(cl.ControlPlane()); ok && minor == rel.Minor {
			// Nothing to accept: left set, the flag would turn the next
			// mistyped tag into a warning.
			c.at(sel("cluster", "autoscaler", "acceptUnknownVersion"), "acceptUnknownVersion has no effect: nodegen's table knows %s, of the control plane's Kubernetes minor; remove it (while it is set, a mistyped tag is only a warning)", pinned)
		}
	}
	// Unknown tags and other minors: errors without acceptUnknownVersion,
	// warnings with it.
	if warnings == accept {
		prefix, fix := "", "; set cluster.autoscaler.acceptUnknownVersion: true to use it on purpose"
		if accept {
			prefix, fix = "warning: ", ""
		}
		if !rel.Known {
			msg := fmt.Sprintf("%snodegen's table of Cluster Autoscaler releases (newest %s) does not know %s", prefix, model.NewestAutoscalerRelease(), pinned)
			if !cl.SetsOnpremProviderID() {
				msg += fmt.Sprintf(", so it cannot tell whether it has the fix for nodes without a providerID (%s); with onpremProviderID %q the control plane and on-prem nodes have none", model.AutoscalerBugRefs, cl.OnpremProviderID)
			}
			if !accept {
				msg += "; a typo, or a release nodegen has not read (docs/autoscaler-version.md lists those it knows)"
			}
			c.at(at, "%s%s", msg, fix)
		}
		if minor, ok := kubernetesMinor(cl.ControlPlane()); ok && minor != rel.Minor {
			c.at(at, "%s%s is for Kubernetes 1.%d, the control plane runs %s: the autoscaler's releases follow the Kubernetes minor of the API server it talks to (kubernetes/autoscaler cluster-autoscaler/README.md, \"Releases\"); pin %s%s",
				prefix, pinned, rel.Minor, cl.ControlPlane(), model.DefaultAutoscalerTag(minor), fix)
		}
	}
	if !warnings {
		if rel.Known && rel.FailsWithoutProviderID && !cl.SetsOnpremProviderID() {
			c.at(sel("cluster", "onpremProviderID"),
				"onpremProviderID %q leaves the control plane and the on-prem nodes without a providerID, and the Cluster Autoscaler %s (%s) fails on a node without one its GCE provider can parse and then scales nothing, up or down (%s); remove the field (the default %q gives them one that maps to no node group) or pin a release with the fix",
				cl.OnpremProviderID, tag, by, model.AutoscalerBugRefs, model.OnpremProviderIDUnmanaged)
		}
		return
	}
	if rel.Known && rel.Patch == 0 && rel.LastPatch > 0 {
		c.at(at, "warning: %s is the first release of its line and misses the fixes of v1.%d.1 to v1.%d.%d; pin v1.%d.%d",
			pinned, rel.Minor, rel.Minor, rel.LastPatch, rel.Minor, rel.LastPatch)
	}
}

// kubernetesMinor is the minor of a "1.<minor>.<patch>" version.
func kubernetesMinor(v string) (int, bool) {
	var major, minor, patch int
	if n, err := fmt.Sscanf(v, "%d.%d.%d", &major, &minor, &patch); err != nil || n != 3 || major != 1 {
		return 0, false
	}
	return minor, true
}
