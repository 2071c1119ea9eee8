package validate

import (
	"time"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// vpnTimers holds the BGP hold time to tunnelLossToleration. A tunnel that
// silently stops carrying packets keeps its routes, on both sides, until
// the BGP hold time runs out (three keepalive intervals, Cloud Router's
// and FRR's alike: google_compute_router's bgp.keepalive_interval, FRR's
// neighbor timers); a node whose connection to the API server ran through
// it is unreachable that long. When the hold time reaches the toleration
// of the pods nodegen renders for cloud nodes, one lost tunnel can evict
// them, which docs/vpn.md ("One tunnel lost for 2 minutes") says it never
// does: the hold time must be shorter.
func (c *checker) vpnTimers(p []cue.Selector, v *model.VPN) {
	k, tol := v.BGPKeepaliveInterval, v.TunnelLossToleration.Duration()
	if k < 20 || k > 60 || tol < 2*time.Minute {
		return // reported as out of range
	}
	hold := time.Duration(v.BGPHoldTime()) * time.Second
	if hold < tol {
		return
	}
	c.at(join(p, "bgpKeepaliveInterval"), "%d: the BGP hold time, three keepalive intervals (%s), is not shorter than tunnelLossToleration %s: a tunnel that silently stops carrying packets keeps its routes until the hold time runs out, so a node whose API connection ran through it can stay unreachable that long and nodegen's pods on it be evicted after tunnelLossToleration, which one lost tunnel must never do (docs/vpn.md); make bgpKeepaliveInterval at most %d or tunnelLossToleration longer than %s",
		k, model.FormatDuration(hold), v.TunnelLossToleration, int((tol-1)/(3*time.Second)), model.FormatDuration(hold))
}
