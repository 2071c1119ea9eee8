package model

import (
	"fmt"
	"strconv"
	"strings"
)

// The Kubernetes minor versions nodegen supports, for the on-prem control
// plane and for the cloud nodes alike.
//
//   - Oldest, 1.31: the cloud nodes' kubeadm reads the JoinConfiguration
//     nodegen renders, kubeadm.k8s.io/v1beta4, from kubeadm 1.31 on
//     (kubernetes/kubernetes cmd/kubeadm/app/apis/kubeadm/v1beta4/doc.go;
//     https://kubernetes.io/docs/reference/config-api/kubeadm-config.v1beta4/).
//     Older kubeadm reads only v1beta3, which nodegen does not render.
//   - Newest, 1.37: the release nodegen's manifests and admission policies
//     are proven against (a real kube-apiserver v1.37.2 in the tests), and
//     whose kubeadm still reads v1beta4 (v1beta3 it refuses:
//     cmd/kubeadm/app/util/config/common.go, oldKnownAPIVersions, v1.37.0).
const (
	OldestSupportedMinor = 31
	NewestSupportedMinor = 37
)

// KubernetesLastPatch is the newest patch release of each supported minor
// that nodegen has read: the tags v0.<minor>.<patch> of k8s.io/api, one
// for every Kubernetes release v1.<minor>.<patch> (the staging repositories
// are tagged with each release), as the Go module proxy listed them on
// 2026-12-02. A newer patch is unknown to nodegen, as a typo is.
var KubernetesLastPatch = map[int]int{31: 14, 32: 13, 33: 13, 34: 13, 35: 10, 36: 6, 37: 2}

// Known reports whether v is a release nodegen's table has read.
func (v KubeVersion) Known() bool {
	last, ok := KubernetesLastPatch[v.Minor]
	return v.Major == 1 && ok && v.Patch <= last
}

// NewestKubernetesPatch is the newest release of v's minor in
// KubernetesLastPatch, "" for a minor it does not have.
func (v KubeVersion) NewestKubernetesPatch() string {
	last, ok := KubernetesLastPatch[v.Minor]
	if !ok {
		return ""
	}
	return fmt.Sprintf("1.%d.%d", v.Minor, last)
}

// MaxKubeletSkew is how many minor versions a kubelet may be older than
// the kube-apiserver it talks to; it may never be newer (the Kubernetes
// version-skew policy, kubernetes/website content/en/releases/version-skew-policy.md,
// "kubelet": https://kubernetes.io/releases/version-skew-policy/#kubelet).
const MaxKubeletSkew = 3

// KubeVersion is a Kubernetes version MAJOR.MINOR.PATCH.
type KubeVersion struct{ Major, Minor, Patch int }

// ParseKubeVersion parses "1.35.2" (no "v", no pre-release).
func ParseKubeVersion(s string) (KubeVersion, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return KubeVersion{}, fmt.Errorf("%q is not MAJOR.MINOR.PATCH", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || p == "" || (len(p) > 1 && p[0] == '0') {
			return KubeVersion{}, fmt.Errorf("%q is not MAJOR.MINOR.PATCH", s)
		}
		n[i] = v
	}
	return KubeVersion{n[0], n[1], n[2]}, nil
}

func (v KubeVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// MinorString is "MAJOR.MINOR".
func (v KubeVersion) MinorString() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// SupportedRange names the supported minors, "1.31 to 1.37".
func SupportedRange() string {
	return fmt.Sprintf("1.%d to 1.%d", OldestSupportedMinor, NewestSupportedMinor)
}

// Supported reports whether nodegen supports v's minor.
func (v KubeVersion) Supported() bool {
	return v.Major == 1 && v.Minor >= OldestSupportedMinor && v.Minor <= NewestSupportedMinor
}

// KubeletSkewProblem says why a kubelet of version kubelet may not talk to
// a kube-apiserver of version apiserver ("" when the policy allows it).
func KubeletSkewProblem(kubelet, apiserver KubeVersion) string {
	switch {
	case kubelet.Major != apiserver.Major:
		return fmt.Sprintf("kubelet %s and the control plane's %s differ in major version", kubelet.MinorString(), apiserver.MinorString())
	case kubelet.Minor > apiserver.Minor:
		return fmt.Sprintf("kubelet %s would be newer than the control plane's %s; the Kubernetes version-skew policy never lets a kubelet be newer than the kube-apiserver (upgrade the control plane first)", kubelet.MinorString(), apiserver.MinorString())
	case apiserver.Minor-kubelet.Minor > MaxKubeletSkew:
		return fmt.Sprintf("kubelet %s would be %d minor versions older than the control plane's %s; the Kubernetes version-skew policy allows at most %d", kubelet.MinorString(), apiserver.Minor-kubelet.Minor, apiserver.MinorString(), MaxKubeletSkew)
	}
	return ""
}

// ControlPlane is the on-prem control plane's Kubernetes version:
// controlPlaneVersion, or kubernetesVersion when it is unset.
func (c *Cluster) ControlPlane() string {
	if c.ControlPlaneVersion != "" {
		return c.ControlPlaneVersion
	}
	return c.KubernetesVersion
}

// NodeVersion is the Kubernetes version a cloud group's nodes join with
// (their kubelet and kubeadm): the group's kubernetesVersion, or the
// cluster's.
func (c *Cluster) NodeVersion(g *NodeGroup) string {
	if g.KubernetesVersion != "" {
		return g.KubernetesVersion
	}
	return c.KubernetesVersion
}
