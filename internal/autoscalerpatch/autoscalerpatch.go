// Package autoscalerpatch is nodegen's patch of the Cluster Autoscaler's
// GCE provider (templates/autoscaler-gce-nodegroupfornode.patch) and the
// image tag of a release built with it, which the rendered chart values
// and Dockerfile carry and explain names.
package autoscalerpatch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"

	"github.com/nodegen/nodegen/templates"
)

// file is the patch's name in templates.
const file = "autoscaler-gce-nodegroupfornode.patch"

// Diff is the patch itself: the unified diff, without the header nodegen
// writes above it in out/.
func Diff() []byte {
	b, err := templates.FS.ReadFile(file)
	if err != nil {
		panic("templates: " + err.Error())
	}
	return b
}

// Tag is the image tag of nodegen's build of a release: the release's tag
// and the patch's digest, so that another patch is another image.
func Tag(release string) string {
	return release + "-nodegen." + digest(Diff())
}

// digest identifies the patch: the first 12 hex digits of the SHA-256 of
// its diff (the lines from the first "--- " on, which is all git apply
// reads).
func digest(patch []byte) string {
	if i := bytes.Index(patch, []byte("--- ")); i > 0 {
		patch = patch[i:]
	}
	sum := sha256.Sum256(patch)
	return hex.EncodeToString(sum[:])[:12]
}
