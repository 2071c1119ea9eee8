package model

import "testing"

// TestClassifyTaint pins the autoscaler's taint classes
// (utils/taints/taints.go) on keys near their boundaries.
func TestClassifyTaint(t *testing.T) {
	cases := []struct {
		key     string
		flagged []string
		want    TaintClass
	}{
		{"startup-taint.cluster-autoscaler.kubernetes.io/gpu", nil, TaintStartup},
		{"ignore-taint.cluster-autoscaler.kubernetes.io/gpu", nil, TaintStartup},
		{"status-taint.cluster-autoscaler.kubernetes.io/x", nil, TaintStatus},
		{"ToBeDeletedByClusterAutoscaler", nil, TaintAutoscalerOwn},
		{"DeletionCandidateOfClusterAutoscaler", nil, TaintAutoscalerOwn},
		{"node.kubernetes.io/pid-pressure", nil, TaintCondition},
		{"node.cloudprovider.kubernetes.io/uninitialized", nil, TaintCondition},
		{"cloud.google.com/impending-node-termination", nil, TaintCondition},
		{"NodeWithImpairedVolumes", nil, TaintCondition},
		{"example.com/gpu-init", []string{"example.com/gpu-init"}, TaintStartup},
		{"example.com/gpu-init", nil, TaintPlain},
		{"nvidia.com/gpu", nil, TaintPlain},
		// A prefix matches only with its slash; other node.kubernetes.io keys are plain.
		{"startup-taint.cluster-autoscaler.kubernetes.iox", nil, TaintPlain},
		{"node.kubernetes.io/out-of-service", nil, TaintPlain},
	}
	for _, c := range cases {
		if got := ClassifyTaint(c.key, c.flagged...); got != c.want {
			t.Errorf("ClassifyTaint(%q, %v) = %d, want %d", c.key, c.flagged, got, c.want)
		}
		if got := SanitizedByAutoscaler(c.key, c.flagged...); got != (c.want != TaintPlain) {
			t.Errorf("SanitizedByAutoscaler(%q) = %v", c.key, got)
		}
	}
}

func TestLabelProblem(t *testing.T) {
	bad := []string{"kubernetes.io/hostname", "kubernetes.io/arch", "kubernetes.io/os", "topology.gke.io/zone",
		"beta.kubernetes.io/os", "failure-domain.beta.kubernetes.io/region",
		"clusterautoscaler-nodetemplate-resources.example.com/fpga", "cloud.google.com/gke-gpu-dra-driver"}
	for _, k := range bad {
		if LabelProblem(k) == "" {
			t.Errorf("LabelProblem(%q) = \"\", want a problem", k)
		}
	}
	for _, k := range []string{"example.com/pool", "node.kubernetes.io/instance-type-x", "cloud.google.com/gke-nodepool"} {
		if p := LabelProblem(k); p != "" {
			t.Errorf("LabelProblem(%q) = %q, want none", k, p)
		}
	}
}
