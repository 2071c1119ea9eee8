package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/templates"
)

// The patch of nodegen's autoscaler build, and the Go image it builds in:
// the major and minor of the go directive of the release's go.mod, as the
// release's own Dockerfile (kubernetes/autoscaler
// cluster-autoscaler-1.35.2, cluster-autoscaler/Dockerfile) builds it.
const (
	autoscalerPatchFile   = "autoscaler-gce-nodegroupfornode.patch"
	autoscalerBuildImage  = "golang:1.25"
	autoscalerRuntimeBase = "gcr.io/distroless/static:nonroot"
	// AutoscalerSourceRepo is where the build clones the release from.
	AutoscalerSourceRepo = "https://github.com/kubernetes/autoscaler.git"
)

// AutoscalerPatchDiff is the patch itself: the unified diff, without the
// header nodegen writes above it in out/.
func AutoscalerPatchDiff() []byte {
	b, err := templates.FS.ReadFile(autoscalerPatchFile)
	if err != nil {
		panic("templates: " + err.Error())
	}
	return b
}

// AutoscalerPatchDigest identifies the patch: the first 12 hex digits of
// the SHA-256 of its diff (the lines from the first "--- " on, which is
// all git apply reads).
func AutoscalerPatchDigest(patch []byte) string {
	if i := bytes.Index(patch, []byte("--- ")); i > 0 {
		patch = patch[i:]
	}
	sum := sha256.Sum256(patch)
	return hex.EncodeToString(sum[:])[:12]
}

// PatchedAutoscalerTag is the image tag of nodegen's build of a release:
// the release's tag and the patch's digest, so that another patch is
// another image.
func PatchedAutoscalerTag(release string) string {
	return release + "-nodegen." + AutoscalerPatchDigest(AutoscalerPatchDiff())
}

// autoscalerImageValues is the chart's image: the release's tag, or
// nodegen's build in the user's repository.
func autoscalerImageValues(c *model.Cluster) map[string]any {
	if p := c.Autoscaler.PatchedImage; p != nil {
		return map[string]any{"repository": p.Repository, "tag": PatchedAutoscalerTag(c.AutoscalerImageTag())}
	}
	return map[string]any{"tag": c.AutoscalerImageTag()}
}

// AutoscalerPatch renders the patch beside the Dockerfile, with
// cluster.autoscaler.patchedImage.
func AutoscalerPatch(src *model.Source, header string) ([]byte, error) {
	if src.Cluster.Autoscaler.PatchedImage == nil {
		return nil, nil
	}
	return append([]byte(header), AutoscalerPatchDiff()...), nil
}

// AutoscalerDockerfile renders the multi-stage build of nodegen's
// autoscaler image, with cluster.autoscaler.patchedImage: the release's
// tag checked out at its commit, the patch applied, the GCE provider only
// (-tags gce), a static binary on a distroless base, as the release's own
// Dockerfile builds it.
func AutoscalerDockerfile(src *model.Source, header string) ([]byte, error) {
	c := &src.Cluster
	p := c.Autoscaler.PatchedImage
	if p == nil {
		return nil, nil
	}
	tag := c.AutoscalerImageTag()
	commit, ok := model.AutoscalerSourceCommit[tag]
	if !ok {
		return nil, fmt.Errorf("nodegen has no patch for the Cluster Autoscaler %s", tag)
	}
	arch := "amd64"
	if g, ok := src.NodeGroups[c.Autoscaler.NodeGroup]; ok {
		if m, ok := gce.MachineType(g.MachineType); ok {
			arch = m.Arch()
		}
	}
	image := p.Repository + ":" + PatchedAutoscalerTag(tag)
	var b strings.Builder
	b.WriteString(header)
	fmt.Fprintf(&b, `# The Cluster Autoscaler %s with nodegen's patch of its GCE provider
# (%s, beside this file): a node without a GCE providerID belongs to no
# node group, so that neither the nodes outside the MIGs nor the stand-ins
# of upcoming nodes stop its loop. Build and push it from this folder, for
# the autoscaler group's architecture, before installing the chart:
#
#   docker buildx build --platform linux/%s -t %s --push .
#
# The source is the release's tag at its commit; the build fails if the
# patch does not apply to it.
FROM %s AS build
ARG COMMIT=%s
WORKDIR /src
RUN git init -q . \
 && git remote add origin %s \
 && git fetch -q --depth 1 origin "$COMMIT" \
 && git checkout -q --detach FETCH_HEAD
COPY %s /tmp/
WORKDIR /src/cluster-autoscaler
RUN git apply --check /tmp/%s && git apply /tmp/%s
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=linux GOARCH=$TARGETARCH go build -trimpath -tags gce -ldflags="-s -w" -o /cluster-autoscaler .

FROM %s
COPY --from=build /cluster-autoscaler /cluster-autoscaler
WORKDIR /
CMD ["/cluster-autoscaler"]
`, tag, pathBase(layout.AutoscalerPatchPath), arch, image, autoscalerBuildImage, commit, AutoscalerSourceRepo,
		pathBase(layout.AutoscalerPatchPath), pathBase(layout.AutoscalerPatchPath), pathBase(layout.AutoscalerPatchPath), autoscalerRuntimeBase)
	return []byte(b.String()), nil
}

func pathBase(p string) string { return p[strings.LastIndex(p, "/")+1:] }
