package validate

import (
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/model"
)

// patchedImage refuses cluster.autoscaler.patchedImage for a release
// nodegen has no patch for: the patch is written against, and built and
// run by the system tests at, the releases of
// model.AutoscalerPatchedReleases only.
func (c *checker) patchedImage() {
	cl := &c.src.Cluster
	if cl.Autoscaler.PatchedImage == nil {
		return
	}
	tag := cl.AutoscalerImageTag()
	if !slices.Contains(model.AutoscalerPatchedReleases, tag) {
		c.at(sel("cluster", "autoscaler", "patchedImage"),
			"nodegen has its patch of the Cluster Autoscaler's GCE provider for %s only, not for %s; set cluster.autoscaler.version to one of them or remove patchedImage",
			strings.Join(model.AutoscalerPatchedReleases, ", "), tag)
	}
}
