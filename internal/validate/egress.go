package validate

import (
	"slices"
	"strings"

	"github.com/distribution/reference"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// internetRegistries are public registries on the internet, by host, and
// who runs them. Under egress "private-google-access" nodegen renders no
// way out of the VPC: Private Google Access lets a VM without an external
// address reach Google APIs and services only (Google, VPC, "Private
// Google Access"), among them Artifact Registry (*.pkg.dev) and Container
// Registry (gcr.io), whose registry domains Google's documentation routes
// through it ("Configure restricted access for GKE private clusters":
// "pkg.dev and gcr.io"). A host of this list is none of those. A host
// that is neither (a mirror of your own, reached over the VPN) is not
// judged: vet cannot know whether it is in reach (check --by-hand lists
// the nodes' egress).
var internetRegistries = map[string]string{
	"docker.io":            "Docker Hub",
	"index.docker.io":      "Docker Hub",
	"registry-1.docker.io": "Docker Hub",
	"registry.k8s.io":      "the Kubernetes project's registry",
	"quay.io":              "Red Hat's Quay",
	"ghcr.io":              "GitHub's registry",
	"nvcr.io":              "NVIDIA's NGC registry",
	"public.ecr.aws":       "Amazon ECR Public",
	"mcr.microsoft.com":    "Microsoft's registry",
}

// egressImages refuses, under egress "private-google-access", each image
// a cloud node booted from one of nodegen's image families runs before it
// is of use and would pull, at boot or later, from a registry on the
// internet. What the family's build script pulls into containerd at
// build (model.Source.PrePulledImages, and the sandbox image) is on the
// node's disk, and the kubelet and containerd do not pull it again
// (imagePullPolicy IfNotPresent); the builder VM pulls those through an
// egress of the user's (docs/images.md, "Where the builder VM runs"),
// which vet does not judge. The node's containerd has no registry
// mirror (the build script configures none), so it pulls the rest from
// the registry each image names; a fixed image's containerd may mirror
// it, so groups booted from fixed images are not judged. The images:
//   - on the autoscaler's group, the Cluster Autoscaler's image (the
//     chart's image.repository, or patchedImage.repository) and the tools
//     image (cluster.taintRemover.image) of the node CSR approver, the
//     join token's renewer and the node collector: without them nothing
//     scales and no new node is approved;
//   - on a GPU family, the node-feature-discovery worker of the GPU
//     Operator's subchart (gpu-operator v26.7.0 Chart.yaml: its
//     dependency node-feature-discovery 0.19.0 from
//     oci://registry.k8s.io/nfd/charts, whose worker image is
//     model.NFDWorkerImageRepository): without its PCI labels the
//     operator deploys no operand to the node, the GPUs never validate
//     and the startup taint stays; and when the operator installs the
//     driver (no family bakes it), its driver container
//     (model.GPUOperatorDriverImageRepository; the operator picks its tag
//     from the node's OS, so the build does not pull it).
func (c *checker) egressImages() {
	cl := &c.src.Cluster
	n := cl.GCP.Network
	if n == nil || n.Egress != model.EgressPrivateGoogleAccess {
		return
	}
	type pull struct {
		image, what, then, fix string
		groups                 []string
		scripts                []string
	}
	var pulls []*pull
	want := func(image, what, then, fix string, im model.NodeImage, groups []string) {
		if slices.ContainsFunc(c.src.PrePulledImages(im), func(p string) bool { return p == image || strings.HasPrefix(p, image+":") }) {
			return
		}
		i := slices.IndexFunc(pulls, func(p *pull) bool { return p.image == image && p.what == what })
		if i < 0 {
			pulls = append(pulls, &pull{image: image, what: what, then: then, fix: fix})
			i = len(pulls) - 1
		}
		for _, g := range groups {
			if !slices.Contains(pulls[i].groups, g) {
				pulls[i].groups = append(pulls[i].groups, g)
			}
		}
		if s := "out/" + c.src.Tree + layout.ImageBuildPath(im.Family); !slices.Contains(pulls[i].scripts, s) {
			pulls[i].scripts = append(pulls[i].scripts, s)
		}
	}
	hostDriver := c.src.HostDriver()
	for _, im := range c.src.NodeImages() {
		if slices.Contains(im.Groups, cl.Autoscaler.NodeGroup) {
			home := []string{cl.Autoscaler.NodeGroup}
			if p := cl.Autoscaler.PatchedImage; p != nil {
				want(p.Repository, "the Cluster Autoscaler's image (cluster.autoscaler.patchedImage.repository)",
					"nothing would scale", "push it to Artifact Registry and name that repository", im, home)
			} else {
				want(model.AutoscalerChartImageRepository, "the Cluster Autoscaler's image (the chart's image.repository, which nodegen's values keep)",
					"nothing would scale", "the chart's repository is changed only by cluster.autoscaler.patchedImage (nodegen's build, pushed to Artifact Registry)", im, home)
			}
			want(cl.TaintRemover.Image, "the tools image (cluster.taintRemover.image) of the node CSR approver, the join token's renewer and the node collector",
				"no new node would be approved", "set cluster.taintRemover.image to a copy in Artifact Registry", im, home)
		}
		if !im.GPU {
			continue
		}
		var gpu []string
		for _, name := range im.Groups {
			if g := c.src.NodeGroups[name]; g != nil && g.HasGPUs() {
				gpu = append(gpu, name)
			}
		}
		want(model.NFDWorkerImageRepository, "the GPU Operator's node-feature-discovery worker (its subchart's image, which nodegen's values keep)",
			"the operator would deploy nothing there without its PCI labels, the GPUs would never validate and the startup taint would stay", "boot those groups from fixed images (not families) whose containerd mirrors it from a registry in reach", im, gpu)
		if !hostDriver {
			want(model.GPUOperatorDriverImageRepository, "the GPU Operator's driver container (the operator installs the driver: no image family bakes it)",
				"no GPU would get a driver", "bake the driver into the GPU families (cluster.imageFamilies.<family>.gpuDriver.image)", im, gpu)
		}
	}
	for _, p := range pulls {
		host := registryHost(p.image) // "" when it does not parse: its own check reports it
		who, bad := internetRegistries[host]
		if !bad {
			continue
		}
		c.at(sel("cluster", "gcp", "network", "egress"), "with egress %q the cloud nodes reach Google APIs, Artifact Registry (*.pkg.dev) and Container Registry (gcr.io) only (Google, Private Google Access), not %s (%s): the nodes of group%s %s, booted from an image that %s does not pull at build, could not pull %s, %s, so %s; %s, or set egress: %q",
			n.Egress, host, who, plural(len(p.groups)), andList(p.groups), andList(p.scripts), p.image, p.what, p.then, p.fix, model.EgressCloudNAT)
	}
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// registryHost is the registry host of image ("docker.io" for a name
// without one), lower-cased; "" when image does not parse.
func registryHost(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return ""
	}
	return strings.ToLower(reference.Domain(named))
}
