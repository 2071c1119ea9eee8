package model

// Rollout is how nodegen rollout replaces stale cloud nodes.
type Rollout struct {
	// Surge is how many old nodes of a MIG are replaced at once, each by a
	// new VM created before the old ones are drained.
	Surge int `json:"surge"`
	// MaxUnavailable is how many replacements of a batch may still be
	// coming up when its old nodes are drained (at most Surge).
	MaxUnavailable int `json:"maxUnavailable"`
	// DrainTimeout is a Go duration: how long one node's drain may take.
	DrainTimeout Duration `json:"drainTimeout"`
	// OnDrainTimeout is what happens when a drain's timeout runs out:
	// OnDrainTimeoutStop or OnDrainTimeoutForce.
	OnDrainTimeout string `json:"onDrainTimeout"`
	// Exclude names the cloud groups the rollout leaves alone.
	Exclude []string `json:"exclude"`
}

// The values of cluster.rollout.onDrainTimeout.
const (
	// OnDrainTimeoutStop stops the rollout, the node schedulable again.
	OnDrainTimeoutStop = "stop"
	// OnDrainTimeoutForce deletes the pods whose evictions are still
	// refused, each with its grace period, and goes on.
	OnDrainTimeoutForce = "force"
)

// RolloutOrder returns the cloud groups in the order nodegen rollout
// replaces their nodes: the autoscaled groups, then the other gce-static
// groups, then the autoscaler's own group, each by name. Excluded groups
// are in it too.
func (s *Source) RolloutOrder() []*NodeGroup {
	var autoscaled, static, last []*NodeGroup
	for _, g := range s.CloudGroups() {
		switch {
		case g.Name == s.Cluster.Autoscaler.NodeGroup:
			last = append(last, g)
		case g.Autoscaled():
			autoscaled = append(autoscaled, g)
		default:
			static = append(static, g)
		}
	}
	return append(append(autoscaled, static...), last...)
}
