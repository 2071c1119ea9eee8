package validate

import (
	"net"
	"slices"
	"strconv"
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
	repoPath := sel("cluster", "autoscaler", "patchedImage", "repository")
	if _, err := reference.ParseNormalizedNamed(cl.Autoscaler.PatchedImage.Repository); err != nil {
		c.at(repoPath, "not an image repository the container runtime takes (github.com/distribution/reference): %v", err)
	} else if why := registryHostProblem(cl.Autoscaler.PatchedImage.Repository); why != "" {
		c.at(repoPath, "%s", why)
	}
	tag := cl.AutoscalerImageTag()
	if !slices.Contains(model.AutoscalerPatchedReleases, tag) {
		c.at(sel("cluster", "autoscaler", "patchedImage"),
			"nodegen has its patch of the Cluster Autoscaler's GCE provider for %s only, not for %s; set cluster.autoscaler.version to one of them or remove patchedImage",
			strings.Join(model.AutoscalerPatchedReleases, ", "), tag)
	}
}

// upstreamRegistries are where the Cluster Autoscaler's own releases are
// published (kubernetes/autoscaler's release notes): nodegen's patched
// build cannot be pushed there.
var upstreamRegistries = []string{"registry.k8s.io", "k8s.gcr.io"}

// registryHostProblem says why the registry host of repository, which
// reference.ParseNormalizedNamed accepted, is not one a node can pull
// the patched build from; "" when it is, or when repository names no host
// (Docker Hub). The grammar (distribution/reference v0.6.0, regexp.go)
// takes any digits as a port and any length of label, which a TCP dial
// (a 16-bit port) and a DNS name (labels of at most 63 octets, RFC 1035
// section 2.3.4) do not.
func registryHostProblem(repository string) string {
	first, _, ok := strings.Cut(repository, "/")
	// distribution/reference's splitDomain: the first component is a
	// host when it has a dot or a port, or is localhost.
	if !ok || !(strings.ContainsAny(first, ".:") || first == "localhost") {
		return ""
	}
	host, port := first, ""
	if h, p, err := net.SplitHostPort(first); err == nil {
		host, port = h, p
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "registry port " + port + " is not a TCP port (1 to 65535): the container runtime cannot reach " + first
		}
	}
	if host == "localhost" || strings.HasPrefix(host, "127.") {
		return "registry host " + host + " is each node's own loopback: every node would pull the autoscaler from itself; push the patched build to a registry the nodes reach"
	}
	if slices.Contains(upstreamRegistries, host) {
		return "registry " + host + " publishes the Cluster Autoscaler's own releases: nodegen's patched build cannot be pushed there; name the registry you push it to (out/cluster-autoscaler/image/)"
	}
	if len(host) > 253 {
		return "registry host " + host + " is longer than a DNS name's 253 characters (RFC 1035): it resolves nowhere"
	}
	for _, label := range strings.Split(host, ".") {
		if len(label) > 63 {
			return "registry host " + host + " has a label of " + strconv.Itoa(len(label)) + " characters, over DNS's 63 (RFC 1035, section 2.3.4): it resolves nowhere"
		}
	}
	return ""
}
