package autoscaler

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/model"
)

// The autoscaler survives its node and its zone: its group has a node in
// each of two zones or more (one MIG per zone, autohealed), and the chart
// runs two replicas on them, never two on one node, under the autoscaler's
// leader election.
const (
	// haReplicas is the autoscaler's replica count when its group
	// holds two nodes or more.
	haReplicas = 2
	// podLabel labels the autoscaler's pods (the chart's
	// podLabels) for its anti-affinity and spread.
	podLabel = "nodegen.dev/component"
	// podLabelValue is podLabel's value.
	podLabelValue = "cluster-autoscaler"
)

// replicasOn is how many autoscaler replicas run on group g (the
// autoscaler's): two, or one when g holds a single node (then a second
// replica, kept off the first one's node, could never schedule).
func replicasOn(g *model.NodeGroup) int {
	return min(haReplicas, g.Max*len(g.Zones))
}

// spread returns the chart values that run replicas autoscaler
// pods on distinct nodes, spread over the zones: replicaCount, podLabels,
// a required pod anti-affinity on the node's hostname and a zone spread.
func spread(replicas int) map[string]any {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{podLabel: podLabelValue}}
	return map[string]any{
		"replicaCount": replicas,
		"podLabels":    map[string]string{podLabel: podLabelValue},
		"affinity": corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: sel, TopologyKey: corev1.LabelHostname,
			}},
		}},
		"topologySpreadConstraints": []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel,
		}},
	}
}
