package gce

import (
	"maps"
	"slices"
	"strings"
)

// The GCE label keys nodegen sets on every instance template.
const (
	LabelCluster   = "nodegen-cluster"
	LabelNodeGroup = "nodegen-node-group"
)

// Labels returns the GCE labels of the instance template of the group
// named group in the cluster named cluster: the two names, then the group's Kubernetes
// labels made valid GCE labels (lower case; characters other than letters, digits, '_' and
// '-' become '_'; keys start with a letter; at most 63 characters). A
// Kubernetes label whose GCE key collides with one already taken is left
// out. GCE labels are for billing and inventory: the autoscaler does not
// read them, and the node's Kubernetes labels come from kube-env and the
// join script.
func Labels(cluster, group string, labels map[string]string) map[string]string {
	out := map[string]string{
		LabelCluster:   LabelValue(cluster),
		LabelNodeGroup: LabelValue(group),
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		key := labelKey(k)
		if _, taken := out[key]; taken {
			continue
		}
		out[key] = LabelValue(labels[k])
	}
	return out
}

// labelMax is the longest GCE label key or value.
const labelMax = 63

func labelChars(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// labelKey turns a Kubernetes label key into a GCE label key.
func labelKey(k string) string {
	s := labelChars(k)
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "k" + s
	}
	if len(s) > labelMax {
		s = s[:labelMax]
	}
	return s
}

// LabelValue turns a Kubernetes label value into a GCE label value.
func LabelValue(v string) string {
	s := labelChars(v)
	if len(s) > labelMax {
		s = s[:labelMax]
	}
	return s
}
