package model

import "time"

// Autohealing is how a gce-static group's MIGs treat a VM whose kubelet
// stops answering its health endpoint.
type Autohealing struct {
	// Repair: the MIGs recreate such a VM. Without it the health check
	// only reports each VM's health (the first step of turning
	// autohealing on for VMs made before it).
	Repair bool `json:"repair"`
	// RebootTime is the longest a reboot keeps the health endpoint down,
	// zero when the source leaves it unset (AutohealingRebootTime).
	RebootTime Duration `json:"rebootTime,omitzero"`
}

// Default reboot times of an autohealed group's VMs: a GPU node's boot may
// build or load the GPU driver before the kubelet answers.
const (
	DefaultRebootTime    = 5 * time.Minute
	DefaultGPURebootTime = 10 * time.Minute
	// MaxRebootTime is the longest reboot time a health check can wait
	// out: (unhealthy threshold 10 − 1) × a check interval of 300 s, the
	// largest values (gce.MaxUnhealthyThreshold, gce.MaxCheckIntervalSec).
	MaxRebootTime = 45 * time.Minute
)

// AutohealingRebootTime is the longest a reboot of group g's VMs keeps
// the kubelet's health endpoint down: the source's rebootTime, or the
// default for the group's shape.
func (g *NodeGroup) AutohealingRebootTime() time.Duration {
	if g.Autohealing != nil && !g.Autohealing.RebootTime.IsZero() {
		return g.Autohealing.RebootTime.Duration()
	}
	if g.GPU != nil {
		return DefaultGPURebootTime
	}
	return DefaultRebootTime
}

// AutohealingRepairs reports whether group g's MIGs recreate an unhealthy
// VM (false: the health check only reports it).
func (g *NodeGroup) AutohealingRepairs() bool {
	return g.Autohealed() && (g.Autohealing == nil || g.Autohealing.Repair)
}
