package model

import (
	"fmt"
	"time"
)

// The join of a cloud VM must end before the autoscaler gives up on it:
// an instance that has not registered a Node within the group's
// maxNodeProvisionTime is deleted. The join script gets that time less
// the margins below as its deadline, counted from when it starts.
const (
	// JoinBootMargin covers the time from the autoscaler's resize request
	// to the startup script's first line: GCE creating the VM, the kernel
	// and systemd booting, the guest agent fetching the script.
	JoinBootMargin = 3 * time.Minute
	// JoinRegistrationMargin covers the time from kubeadm join returning
	// to the Node being visible to the autoscaler (kubelet start, TLS
	// bootstrap already done by kubeadm, the Node object's first sync).
	JoinRegistrationMargin = time.Minute
	// MinJoinDeadline is the shortest deadline nodegen renders: below it a
	// join over a VPN cannot be expected to finish.
	MinJoinDeadline = 2 * time.Minute
)

// NodeStateDir is where a cloud node's startup script keeps its files:
// the join configuration (removed at every boot and on exit) and the
// kubeadm patches directory.
const NodeStateDir = "/var/lib/nodegen"

// NodePatchesDir is the kubeadm patches directory the JoinConfiguration
// names.
const NodePatchesDir = NodeStateDir + "/patches"

// MaxNodeProvisionTime is the group's effective maxNodeProvisionTime: its
// own autoscaling.maxNodeProvisionTime (read by the autoscaler from
// kube-env, so only for autoscaled groups), else the cluster's.
func (c *Cluster) MaxNodeProvisionTime(g *NodeGroup) time.Duration {
	if g.Autoscaled() && !g.Autoscaling.MaxNodeProvisionTime.IsZero() {
		return g.Autoscaling.MaxNodeProvisionTime.Duration()
	}
	return c.Autoscaler.MaxNodeProvisionTime.Duration()
}

// JoinDeadline is how long the group's join script may take, from its
// start to kubeadm join's return: the effective maxNodeProvisionTime less
// JoinBootMargin and JoinRegistrationMargin. It is an error when that
// leaves less than MinJoinDeadline.
func (c *Cluster) JoinDeadline(g *NodeGroup) (time.Duration, error) {
	mnpt := c.MaxNodeProvisionTime(g)
	d := mnpt - JoinBootMargin - JoinRegistrationMargin
	if d < MinJoinDeadline {
		return 0, fmt.Errorf("maxNodeProvisionTime %s leaves the join %s after the boot (%s) and registration (%s) margins; it needs at least %s, so maxNodeProvisionTime at least %s",
			mnpt, d, JoinBootMargin, JoinRegistrationMargin, MinJoinDeadline, MinJoinDeadline+JoinBootMargin+JoinRegistrationMargin)
	}
	return d, nil
}

// The per-VM values of the JoinConfiguration, left as placeholders in the
// document the startup script carries and substituted by the script once
// it has checked each value against a strict pattern (instance name and
// zone [a-z0-9-], token [a-z0-9.]).
//
// Why the substitution cannot change the document's structure:
//   - '@' occurs in no value nodegen renders into the document (label
//     and taint syntax, GCE names, the endpoint's host:port, sha256 CA
//     hashes, paths and durations exclude it), and the document is
//     checked to hold no '@' outside a placeholder (package verify, on
//     every run). So bash's ${doc//"@NODEGEN_X@"/...} replaces
//     placeholders and nothing else, and no substituted value contains '@'.
//   - The same check holds every placeholder to be either a whole scalar
//     written in quotes (the YAML encoder quotes a scalar starting with
//     '@'), or inside a plain scalar that also holds '/' or '=' outside
//     placeholders. Inside quotes the characters [a-z0-9.-] are literal;
//     a plain scalar holding '/' or '=' resolves to a string whatever
//     [a-z0-9.-] text is put into it, and such text adds no ": ", " #",
//     leading or trailing space that could end the scalar.
const (
	InstancePlaceholder = "@NODEGEN_INSTANCE_NAME@"
	ZonePlaceholder     = "@NODEGEN_ZONE@"
	TokenPlaceholder    = "@NODEGEN_JOIN_TOKEN@"
)

// JoinPlaceholders lists the placeholders in the order above.
var JoinPlaceholders = []string{InstancePlaceholder, ZonePlaceholder, TokenPlaceholder}

// JoinHeredocDelimiter ends the quoted heredoc that holds the
// JoinConfiguration in the startup script. A YAML line the encoder writes
// is a key followed by ':', a list item starting with '-', or indented;
// this word is none of these, and the document is checked not to hold it.
const JoinHeredocDelimiter = "NODEGEN_JOIN_CONFIGURATION"

// KubeletPatchHeredocDelimiter ends the heredoc of the kubelet patch.
const KubeletPatchHeredocDelimiter = "NODEGEN_KUBELET_PATCH"

// ProviderIDTemplate is the kubelet --provider-id of the cluster's cloud
// nodes with placeholders: gce://<project>/<zone>/<instance>, the form
// the autoscaler's GCE provider maps to a MIG instance.
func (c *Cluster) ProviderIDTemplate() string {
	return "gce://" + c.GCP.Project + "/" + ZonePlaceholder + "/" + InstancePlaceholder
}

// The kubelet's own health endpoint (KubeletConfiguration healthzPort,
// default 10248; plain HTTP, no authentication, body "ok"). Its default
// bind address is 127.0.0.1; autohealed groups bind it to every address
// (KubeletHealthzBindAddress) so that the MIG's health checker reaches it.
const (
	// KubeletPort is the kubelet's API (KubeletConfiguration port,
	// default 10250), which the control plane calls for logs, exec and
	// metrics.
	KubeletPort               = 10250
	KubeletHealthzPort        = 10248
	KubeletHealthzPath        = "/healthz"
	KubeletHealthzBindAddress = "0.0.0.0"
)

// Autohealed reports whether group g's MIGs recreate a VM whose kubelet
// stops answering: the cloud groups the autoscaler does not size.
func (g *NodeGroup) Autohealed() bool { return g.Cloud() && !g.Autoscaled() }

// PodsMayReachMetadataServer reports whether pods on the group's nodes may
// reach the GCE metadata server (and so the VM service account's token).
// Only the autoscaler's own group may: the autoscaler and the cluster's
// day-2 jobs that run there call Google APIs as the VM. Every other cloud
// group's join script blocks forwarded traffic to the metadata server.
func (c *Cluster) PodsMayReachMetadataServer(g *NodeGroup) bool {
	return g.Name == c.Autoscaler.NodeGroup
}
