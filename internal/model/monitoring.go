package model

import "regexp"

// The autoscaler as the cluster-autoscaler chart installs it with
// nodegen's values: the chart names its Deployment and Service after
// fullnameOverride, and the Service's port serves the autoscaler's
// /metrics (chart 9.59.0 values.yaml: service.servicePort 8085,
// service.portName "http"; the autoscaler's --address default ":8085").
const (
	// AutoscalerFullname is the chart's fullnameOverride: the name of the
	// autoscaler's Deployment and Service, and so the job label a
	// ServiceMonitor of that Service gives its metrics (prometheus-operator
	// names the job after the Service unless jobLabel says otherwise).
	AutoscalerFullname = "cluster-autoscaler"
	// AutoscalerMetricsPortName is the name of the Service's port.
	AutoscalerMetricsPortName = "http"
	// MetricsServiceLabel is the label nodegen puts on the autoscaler's
	// Service (the chart's service.labels) and its ServiceMonitor selects
	// on: the chart's own labels carry the Helm release's name.
	MetricsServiceLabel = "nodegen.dev/metrics"
)

// EffectiveCaps are the cluster-wide caps the autoscaler is given: the
// source's caps plus what the declared nodes outside the MIGs count
// (Fixed), as flags.txt renders them. A zero value or a missing map entry
// is no cap.
type EffectiveCaps struct {
	MaxNodes     int64
	CoresMax     int64
	MemoryGiBMax int64
	// GPUsMax are the GPU caps by type.
	GPUsMax map[string]int64
	// Cores, Memory and GPUs say which caps the source sets (CoresMax can
	// be zero only if unset).
	Cores, Memory bool
}

// Caps returns the autoscaler's effective caps, and false when the source
// sets none.
func (s *Source) Caps() (EffectiveCaps, bool) {
	caps := s.Cluster.Autoscaler.Caps
	if caps == nil {
		return EffectiveCaps{}, false
	}
	f := s.Fixed()
	out := EffectiveCaps{GPUsMax: map[string]int64{}}
	if caps.MaxNodesTotal > 0 {
		out.MaxNodes = int64(caps.MaxNodesTotal) + f.Nodes
	}
	if caps.Cores != nil {
		out.Cores, out.CoresMax = true, caps.Cores.Max+f.CPU
	}
	if caps.MemoryGiB != nil {
		out.Memory, out.MemoryGiBMax = true, caps.MemoryGiB.Max+f.MemoryGiB
	}
	for t, r := range caps.GPUs {
		out.GPUsMax[t] = r.Max // the declared nodes' GPUs count towards none (FixedCapacity)
	}
	return out, true
}

// InstanceNamePattern is a regular expression (RE2, to be anchored by its
// user) that matches the names of the VMs of a cloud group's MIGs, and so
// of their Nodes: the group's base instance name, '-' and the four
// characters a MIG appends (instanceSuffix).
func (c *Cluster) InstanceNamePattern(g *NodeGroup) string {
	return regexp.QuoteMeta(c.BaseInstanceName(g)) + "-[a-z0-9]{4}"
}
