package model

import (
	"fmt"
	"strings"
	"time"
)

// What a new node does after it registered, until it is usable, as
// nodegen allows for it. These are allowances, not measurements: each
// is the time nodegen budgets for the step. With the GPU Operator
// building the driver they add up to the autoscaler's default
// --max-node-startup-time (15m), above the public reports' 10 minutes
// for a whole GPU node; a source whose groups need more gets the flag.
const (
	// NodeReadyAllowance: the kubelet reports Ready once kube-proxy and
	// the CNI agent run (their images pulled, unless the image holds
	// them).
	NodeReadyAllowance = 2 * time.Minute
	// GPUValidationAllowance: node-feature-discovery labels the GPUs,
	// the GPU Operator labels the node and starts its device plugin and
	// validator (driver, toolkit, CUDA and plugin validation, the CUDA
	// workload pod included) and the taint remover lifts the startup
	// taint.
	GPUValidationAllowance = 3 * time.Minute
	// GPUDriverBuildAllowance: the GPU Operator's driver container is
	// pulled and compiles and loads the kernel module on the node, and
	// its toolkit container installs the toolkit. Public reports put GPU
	// node readiness with a driver installed at boot at 4.5 to 10
	// minutes (GoogleCloudPlatform/selkies-vdi#1,
	// codalab/codalab-worksheets#4042, kubernetes/autoscaler#3464 and
	// #6707); nodegen allows their upper end. A baked driver
	// (gpuDriver.image) needs none of it.
	GPUDriverBuildAllowance = 10 * time.Minute
)

// InitBudget is how long a new node of a cloud group may take until it is
// usable, as the autoscaler counts it: Provision to register its Node
// (the group's maxNodeProvisionTime, within which the join script's
// deadline and margins fit: Cluster.JoinDeadline), then Startup to be
// ready (the autoscaler's --max-node-startup-time, one for every group),
// of which the node needs Needs (NodeReadyAllowance and, on a GPU group,
// its driver and validation).
type InitBudget struct {
	Provision, Startup, Needs time.Duration
	// Steps name what Needs is made of.
	Steps []string
}

// Total is the whole budget: the longest a scale-up of the group takes
// before its node is usable, and with an autoscaler build that adds no
// node while one is upcoming, the longest each such scale-up freezes
// every other.
func (b InitBudget) Total() time.Duration { return b.Provision + b.Startup }

// startupNeeds is what a node of g needs after it registered.
func (s *Source) startupNeeds(g *NodeGroup) (time.Duration, []string) {
	d := NodeReadyAllowance
	steps := []string{"node ready " + FormatDuration(NodeReadyAllowance)}
	if g.HasGPUs() {
		if _, family, ok := ImageFamily(g.Image); ok && s.Cluster.BakedDriver(family) != nil {
			steps = append(steps, "driver baked into the image (none built at boot)")
		} else {
			d += GPUDriverBuildAllowance
			steps = append(steps, "driver built by the GPU Operator "+FormatDuration(GPUDriverBuildAllowance))
		}
		d += GPUValidationAllowance
		steps = append(steps, "GPU validation "+FormatDuration(GPUValidationAllowance))
	}
	return d, steps
}

// MaxNodeStartupTime is the autoscaler's --max-node-startup-time for the
// source: its default, or the largest startup need of a cloud group when
// that is longer (the flag is global: the GCE provider reads no startup
// time per MIG, cluster-autoscaler-1.35.2 cloudprovider/gce/gce_manager.go
// GetMigOptions). Rendered returns whether nodegen must set the flag.
func (s *Source) MaxNodeStartupTime() (d time.Duration, rendered bool) {
	d = DefaultMaxNodeStartupTime
	for _, g := range s.CloudGroups() {
		if n, _ := s.startupNeeds(g); n > d {
			d, rendered = n, true
		}
	}
	return d, rendered
}

// InitBudget is the init budget of cloud group g. For many groups use
// InitBudgets: the startup time is decided from every group.
func (s *Source) InitBudget(g *NodeGroup) InitBudget {
	startup, _ := s.MaxNodeStartupTime()
	return s.initBudget(g, startup)
}

// InitBudgets are the init budgets of the cloud groups, in CloudGroups'
// order, the autoscaler's startup time decided once for all of them.
func (s *Source) InitBudgets() []InitBudget {
	startup, _ := s.MaxNodeStartupTime()
	groups := s.CloudGroups()
	out := make([]InitBudget, len(groups))
	for i, g := range groups {
		out[i] = s.initBudget(g, startup)
	}
	return out
}

func (s *Source) initBudget(g *NodeGroup, startup time.Duration) InitBudget {
	needs, steps := s.startupNeeds(g)
	return InitBudget{Provision: s.Cluster.MaxNodeProvisionTime(g), Startup: startup, Needs: needs, Steps: steps}
}

// String says the budget in one line.
func (b InitBudget) String() string {
	return fmt.Sprintf("%s (%s to register: maxNodeProvisionTime; %s to be ready: --max-node-startup-time, of which it needs %s: %s)",
		FormatDuration(b.Total()), FormatDuration(b.Provision), FormatDuration(b.Startup), FormatDuration(b.Needs), strings.Join(b.Steps, ", "))
}
