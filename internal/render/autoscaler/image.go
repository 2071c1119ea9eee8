package autoscaler

import (
	"fmt"
	"strings"

	"github.com/nodegen/nodegen/internal/autoscalerpatch"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// The Go image nodegen's autoscaler build compiles in: the major and minor
// of the go directive of the release's go.mod, as the release's own
// Dockerfile (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// cluster-autoscaler/Dockerfile) builds it; the base it runs on; and
// where the build clones the release from.
const (
	buildImage  = "golang:1.25"
	runtimeBase = "gcr.io/distroless/static:nonroot"
	sourceRepo  = "https://github.com/kubernetes/autoscaler.git"
)

// imageValues is the chart's image: the release's tag, or
// nodegen's build in the user's repository.
func imageValues(c *model.Cluster) map[string]any {
	if p := c.Autoscaler.PatchedImage; p != nil {
		return map[string]any{"repository": p.Repository, "tag": autoscalerpatch.Tag(c.AutoscalerImageTag())}
	}
	return map[string]any{"tag": c.AutoscalerImageTag()}
}

// Patch renders the patch beside the Dockerfile, with
// cluster.autoscaler.patchedImage.
func Patch(src *model.Source, header string) ([]byte, error) {
	if src.Cluster.Autoscaler.PatchedImage == nil {
		return nil, nil
	}
	return append([]byte(header), autoscalerpatch.Diff()...), nil
}

// Dockerfile renders the multi-stage build of nodegen's
// autoscaler image, with cluster.autoscaler.patchedImage: the release's
// tag checked out at its commit, the patch applied, the GCE provider only
// (-tags gce), a static binary on a distroless base, as the release's own
// Dockerfile builds it.
func Dockerfile(src *model.Source, header string) ([]byte, error) {
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
		if m := g.Shape.Machine; m != nil {
			arch = m.Arch()
		}
	}
	image := p.Repository + ":" + autoscalerpatch.Tag(tag)
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
`, tag, pathBase(layout.AutoscalerPatchPath), arch, image, buildImage, commit, sourceRepo,
		pathBase(layout.AutoscalerPatchPath), pathBase(layout.AutoscalerPatchPath), pathBase(layout.AutoscalerPatchPath), runtimeBase)
	return []byte(b.String()), nil
}

func pathBase(p string) string { return p[strings.LastIndex(p, "/")+1:] }
