package kubeadm

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JoinTimeouts are kubeadm's own timeouts of one join attempt for a
// script with the given deadline: kubeadm's defaults (discovery and TLS
// bootstrap 5m, API calls 1m), each cut to a third of the deadline so
// that an attempt that times out leaves room for another.
func JoinTimeouts(deadline time.Duration) *Timeouts {
	third := (deadline / 3).Truncate(time.Second)
	d := func(def time.Duration) *metav1.Duration {
		return &metav1.Duration{Duration: min(def, third)}
	}
	return &Timeouts{
		Discovery:         d(5 * time.Minute),
		TLSBootstrap:      d(5 * time.Minute),
		KubernetesAPICall: d(time.Minute),
	}
}
