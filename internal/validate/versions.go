package validate

import (
	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// versions checks the Kubernetes versions against the range nodegen
// supports (model.SupportedRange) and the kubelet skew policy: every cloud
// node's kubelet at most model.MaxKubeletSkew minors older than the
// control plane, never newer. Each finding is at the value that breaks it.
func (c *checker) versions() {
	cl := &c.src.Cluster
	cpPath := sel("cluster", "kubernetesVersion")
	if cl.ControlPlaneVersion != "" {
		cpPath = sel("cluster", "controlPlaneVersion")
	}
	whose := "the control plane's and the cloud nodes'"
	if cl.ControlPlaneVersion != "" {
		whose = "the control plane's"
	}
	cp, cpOK := c.supportedVersion(cpPath, cl.ControlPlane(), whose)
	if cl.ControlPlaneVersion != "" {
		// kubernetesVersion is then the cloud nodes' default only.
		if v, ok := c.supportedVersion(sel("cluster", "kubernetesVersion"), cl.KubernetesVersion, "the cloud nodes'"); ok && cpOK {
			c.skew(sel("cluster", "kubernetesVersion"), "the cloud nodes' default", v, cp)
		}
	}
	for _, g := range c.src.Groups() {
		if !g.Cloud() || g.KubernetesVersion == "" || c.broken.Groups[g.Name] {
			continue
		}
		p := sel("nodeGroups", g.Name, "kubernetesVersion")
		if v, ok := c.supportedVersion(p, g.KubernetesVersion, "node group "+quote(g.Name)+"'s"); ok && cpOK {
			c.skew(p, "node group "+quote(g.Name), v, cp)
		}
	}
}

// supportedVersion parses a version and reports it at p when nodegen does
// not support it.
func (c *checker) supportedVersion(p []cue.Selector, s, whose string) (model.KubeVersion, bool) {
	v, err := model.ParseKubeVersion(s)
	if err != nil {
		c.at(p, "%v", err)
		return v, false
	}
	if !v.Supported() {
		why := "newer releases are not yet proven with nodegen's output"
		if v.Major == 1 && v.Minor < model.OldestSupportedMinor {
			why = "kubeadm reads the kubeadm.k8s.io/v1beta4 JoinConfiguration nodegen renders from 1.31 on; older kubeadm needs v1beta3, which nodegen does not render"
		}
		c.at(p, "Kubernetes %s (%s version) is not supported: nodegen supports %s (%s; see docs/versions.md)", v.MinorString(), whose, model.SupportedRange(), why)
		return v, false
	}
	if !v.Known() && !c.src.Cluster.AcceptUnknownKubernetesVersion {
		c.at(p, "nodegen's table of Kubernetes releases (newest %s) does not know %s (%s version); a typo, or a release nodegen has not read (docs/versions.md); set cluster.acceptUnknownKubernetesVersion: true to use it on purpose", v.NewestKubernetesPatch(), v, whose)
	}
	return v, true
}

// kubernetesAcceptNoEffect refuses cluster.acceptUnknownKubernetesVersion
// when every Kubernetes version of the source (the cluster's, the
// control plane's, the cloud groups') is a release nodegen's table knows:
// left set, it would turn the next mistyped version into a warning.
func (c *checker) kubernetesAcceptNoEffect() {
	cl := &c.src.Cluster
	if !cl.AcceptUnknownKubernetesVersion {
		return
	}
	versions := []string{cl.KubernetesVersion, cl.ControlPlaneVersion}
	for _, g := range c.src.Groups() {
		if g.Cloud() {
			if c.broken.Groups[g.Name] {
				return
			}
			versions = append(versions, g.KubernetesVersion)
		}
	}
	for _, s := range versions {
		if s == "" {
			continue
		}
		if v, err := model.ParseKubeVersion(s); err != nil || !v.Supported() || !v.Known() {
			return // accepted, or a finding of its own
		}
	}
	c.at(sel("cluster", "acceptUnknownKubernetesVersion"), "acceptUnknownKubernetesVersion has no effect: nodegen's table knows every Kubernetes version of the source; remove it (while it is set, a mistyped version is only a warning)")
}

// kubernetesReleaseWarnings warns about each Kubernetes version the
// source accepts (cluster.acceptUnknownKubernetesVersion) although
// nodegen's table of releases does not know it.
func (c *checker) kubernetesReleaseWarnings() {
	cl := &c.src.Cluster
	if !cl.AcceptUnknownKubernetesVersion {
		return
	}
	warn := func(p []cue.Selector, s string) {
		if v, err := model.ParseKubeVersion(s); err == nil && v.Supported() && !v.Known() {
			c.at(p, "warning: nodegen's table of Kubernetes releases (newest %s) does not know %s", v.NewestKubernetesPatch(), v)
		}
	}
	warn(sel("cluster", "kubernetesVersion"), cl.KubernetesVersion)
	if cl.ControlPlaneVersion != "" {
		warn(sel("cluster", "controlPlaneVersion"), cl.ControlPlaneVersion)
	}
	for _, g := range c.src.Groups() {
		if g.Cloud() && g.KubernetesVersion != "" && !c.broken.Groups[g.Name] {
			warn(sel("nodeGroups", g.Name, "kubernetesVersion"), g.KubernetesVersion)
		}
	}
}

// skew reports at p a kubelet version the control plane's does not allow.
func (c *checker) skew(p []cue.Selector, what string, kubelet, cp model.KubeVersion) {
	if msg := model.KubeletSkewProblem(kubelet, cp); msg != "" {
		c.at(p, "%s: %s", what, msg)
		return
	}
	// kubeadm's version skew policy: the kubeadm of a joining node is the
	// control plane's minor ("the kubeadm binary used for kubeadm join must
	// match the last version of kubeadm used to either create the cluster
	// with kubeadm init or to upgrade the same node with kubeadm upgrade":
	// kubernetes/website content/en/docs/setup/production-environment/
	// tools/kubeadm/create-cluster-kubeadm.md, "Version skew policy"). A
	// node's image carries the kubeadm of its Kubernetes version; the
	// kubelet skew above holds for nodes that joined before an upgrade, not
	// for the new nodes nodegen's artifacts make.
	if kubelet.Minor != cp.Minor {
		c.at(p, "%s: its nodes would join with kubeadm %s, and the control plane runs %s: kubeadm's version skew policy has a joining node's kubeadm at the control plane's minor (an older kubelet is fine on a node that joined before the control plane's upgrade, not on a new one); use %s.x, with an image that has that kubeadm and kubelet",
			what, kubelet.MinorString(), cp.MinorString(), cp.MinorString())
	}
}

func quote(s string) string { return `"` + s + `"` }
