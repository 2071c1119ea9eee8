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

// MaxNodeProvisionTime is the group's effective maxNodeProvisionTime: its
// own autoscaling.maxNodeProvisionTime (read by the autoscaler from
// kube-env, so only for autoscaled groups), else the cluster's.
func (c *Cluster) MaxNodeProvisionTime(g *NodeGroup) (time.Duration, error) {
	s := c.Autoscaler.MaxNodeProvisionTime
	if g.Autoscaled() && g.Autoscaling.MaxNodeProvisionTime != "" {
		s = g.Autoscaling.MaxNodeProvisionTime
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("maxNodeProvisionTime %q: %w", s, err)
	}
	return d, nil
}

// JoinDeadline is how long the group's join script may take, from its
// start to kubeadm join's return: the effective maxNodeProvisionTime less
// JoinBootMargin and JoinRegistrationMargin. It is an error when that
// leaves less than MinJoinDeadline.
func (c *Cluster) JoinDeadline(g *NodeGroup) (time.Duration, error) {
	mnpt, err := c.MaxNodeProvisionTime(g)
	if err != nil {
		return 0, err
	}
	d := mnpt - JoinBootMargin - JoinRegistrationMargin
	if d < MinJoinDeadline {
		return 0, fmt.Errorf("maxNodeProvisionTime %s leaves the join %s after the boot (%s) and registration (%s) margins; it needs at least %s, so maxNodeProvisionTime at least %s",
			mnpt, d, JoinBootMargin, JoinRegistrationMargin, MinJoinDeadline, MinJoinDeadline+JoinBootMargin+JoinRegistrationMargin)
	}
	return d, nil
}

// PodsMayReachMetadataServer reports whether pods on the group's nodes may
// reach the GCE metadata server (and so the VM service account's token).
// Only the autoscaler's own group may: the autoscaler and the cluster's
// day-2 jobs that run there call Google APIs as the VM. Every other cloud
// group's join script blocks forwarded traffic to the metadata server.
func (c *Cluster) PodsMayReachMetadataServer(g *NodeGroup) bool {
	return g.Name == c.Autoscaler.NodeGroup
}
