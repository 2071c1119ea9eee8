package validate

import (
	"slices"
	"strings"

	"github.com/distribution/reference"

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
	// The chart runs <repository>:<tag>: the repository must be a name
	// the container runtime parses (github.com/distribution/reference
	// v0.6.0: the schema's pattern, and a path after the registry host of
	// at most RepositoryNameTotalLengthMax, 255 characters, reference.go).
	if _, err := reference.ParseNormalizedNamed(cl.Autoscaler.PatchedImage.Repository); err != nil {
		c.at(sel("cluster", "autoscaler", "patchedImage", "repository"), "not an image repository the container runtime takes (github.com/distribution/reference): %v", err)
	}
	tag := cl.AutoscalerImageTag()
	if !slices.Contains(model.AutoscalerPatchedReleases, tag) {
		c.at(sel("cluster", "autoscaler", "patchedImage"),
			"nodegen has its patch of the Cluster Autoscaler's GCE provider for %s only, not for %s; set cluster.autoscaler.version to one of them or remove patchedImage",
			strings.Join(model.AutoscalerPatchedReleases, ", "), tag)
	}
}
