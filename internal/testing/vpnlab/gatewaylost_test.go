//go:build linux

package vpnlab

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// twoGateways is the shipped example's VPN as it is: tunnel0 on vpn-gw-a,
// tunnel1 on vpn-gw-b (TWO_IPS_REDUNDANCY), and siteBGP, the gateways'
// sessions with the site's router.
func twoGateways(t *testing.T) rendered {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := testsrc.CopyShippedTo(dir); err != nil {
		t.Fatal(err)
	}
	r := render(t, dir)
	if len(r.gwDirs) != 2 || r.vpn.SiteBGP == nil || len(r.vpn.SiteBGP.Routers) != 1 {
		t.Fatalf("the fixture has gateways %v and siteBGP %+v: want two gateways and one site router", r.gwDirs, r.vpn.SiteBGP)
	}
	return r
}

// siteRouterConf is what docs/vpn.md ("The site's routing") tells the
// site to configure on its router, in FRR, as written there: the test
// runs the runbook's own lines. It returns them, the router's ASN and the
// gateways' LAN addresses they name, in order.
func siteRouterConf(t *testing.T) (conf []byte, asn int64, gateways []netip.Addr, onpremASN int64) {
	t.Helper()
	f := filepath.Join(testsrc.RepoRoot(), "docs", "vpn.md")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := bytes.Cut(b, []byte("\n### The site's routing\n"))
	if !ok {
		t.Fatalf("%s: no section \"The site's routing\"", f)
	}
	m := regexp.MustCompile("(?s)\n```\n(frr defaults traditional\n.*?)```\n").FindSubmatch(sec)
	if m == nil {
		t.Fatalf("%s: \"The site's routing\" shows no router's frr.conf", f)
	}
	conf = m[1]
	rb := regexp.MustCompile(`(?m)^router bgp (\d+)$`).FindSubmatch(conf)
	if rb == nil {
		t.Fatalf("%s: the site router's frr.conf has no router bgp:\n%s", f, conf)
	}
	asn, _ = strconv.ParseInt(string(rb[1]), 10, 64)
	for _, n := range regexp.MustCompile(`(?m)^ neighbor (\S+) remote-as (\d+)$`).FindAllSubmatch(conf, -1) {
		a, err := netip.ParseAddr(string(n[1]))
		if err != nil {
			t.Fatalf("%s: neighbor %s: %v", f, n[1], err)
		}
		gateways = append(gateways, a)
		onpremASN, _ = strconv.ParseInt(string(n[2]), 10, 64)
	}
	return conf, asn, gateways, onpremASN
}

// siteTimers reads the keepalive and hold time a gateway's rendered
// frr.conf gives its session with router.
func siteTimers(t *testing.T, frr []byte, router string) (keepalive, hold time.Duration) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^ neighbor ` + regexp.QuoteMeta(router) + ` timers (\d+) (\d+)$`).FindSubmatch(frr)
	if m == nil {
		t.Fatalf("the gateway's frr.conf sets no timers for the site router %s:\n%s", router, frr)
	}
	k, _ := strconv.Atoi(string(m[1]))
	h, _ := strconv.Atoi(string(m[2]))
	return time.Duration(k) * time.Second, time.Duration(h) * time.Second
}

// TestRenderedVPNGatewayLost runs the shipped example's two-gateway
// topology: vpn-gw-a and vpn-gw-b each with their rendered files (one
// tunnel each, and the BGP session with the site's router that siteBGP
// renders), the Cloud VPN and Cloud Router stand-in from the rendered
// vpn.tf, and the site's router configured as docs/vpn.md tells the site
// to, on one LAN with both gateways and an on-prem host. The router
// learns the cloud prefixes from both gateways. A flow between the
// on-prem host and a cloud node runs; the gateway the router sends it
// through is lost (links down, then every daemon killed: it says nothing
// on its way out). The router must drop that gateway when the session's
// hold time the gateway's frr.conf sets runs out, and the flow must run
// again through the other gateway then, or, when the cloud side sent it
// into the lost gateway's tunnel too, at the Cloud Router's hold time
// (Cloud Router has no other way to notice a silent peer).
func TestRenderedVPNGatewayLost(t *testing.T) {
	requireLab(t)
	t.Parallel()
	r := twoGateways(t)
	routerConf, routerASN, gwLAN, peerASN := siteRouterConf(t)
	site := r.vpn.SiteBGP
	if routerASN != site.ASN || peerASN != r.vpn.OnpremASN || len(gwLAN) != 2 {
		t.Fatalf("docs/vpn.md's site router is AS %d with neighbors %v in AS %d; the shipped example has siteBGP.asn %d, onpremASN %d and two gateways", routerASN, gwLAN, peerASN, site.ASN, r.vpn.OnpremASN)
	}
	onpremRange := netip.MustParsePrefix(r.network.OnpremRanges[0])
	cloudRange := netip.MustParsePrefix(r.network.SubnetworkRange)
	routerAddr := netip.MustParseAddr(site.Routers[0])
	for _, a := range append([]netip.Addr{routerAddr, r.cp}, gwLAN...) {
		if !onpremRange.Contains(a) {
			t.Fatalf("%s is outside the on-prem range %s the lab's LAN is", a, onpremRange)
		}
	}

	keys := psks{}
	a, cloud, _, v := r.sidesWith(t, keys)
	secretOf := map[string]string{}
	for i, tn := range r.vpn.Tunnels {
		secretOf[model.TunnelName(i)] = tn.SharedSecret.Secret
	}
	b, err := onpremSide(r.gwDirs[1], func(conn string) string { return keys.key(secretOf[conn]) }, netip.PrefixFrom(gwLAN[1], onpremRange.Bits()), r.cp)
	if err != nil {
		t.Fatal(err)
	}
	a.Gateway = netip.PrefixFrom(gwLAN[0], onpremRange.Bits())
	b.Name, b.LANMTU = "opb", a.LANMTU
	if len(a.Tunnels) != 1 || len(b.Tunnels) != 1 {
		t.Fatalf("vpn-gw-a has %d tunnels, vpn-gw-b %d: want one each", len(a.Tunnels), len(b.Tunnels))
	}
	siteKeepalive, siteHold := siteTimers(t, a.FRR, site.Routers[0])
	if k, h := siteTimers(t, b.FRR, site.Routers[0]); k != siteKeepalive || h != siteHold {
		t.Fatalf("the gateways' timers with the site router differ: %s/%s and %s/%s", siteKeepalive, siteHold, k, h)
	}
	cloudHold := time.Duration(3*v.Keepalive) * time.Second

	start := time.Now()
	lab, err := startSite(t, a, cloud, b, Site{Router: netip.PrefixFrom(routerAddr, onpremRange.Bits()), FRR: routerConf})
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitUp(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitRoutes(1, onpremRange, 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitSiteRoutes(cloudRange, 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("both tunnels up, the cloud side routing over both, the site's router over both gateways: up after %s", time.Since(start).Round(100*time.Millisecond))
	// BGP takes the smaller hold time of the two ends (RFC 4271, 4.2):
	// the router, configured with FRR's default (180 s), has the
	// gateways' session hold time.
	for _, g := range gwLAN {
		if got := lab.siteHoldTime(g); got != siteHold {
			t.Errorf("the site router's session with the gateway %s has a hold time of %s, want the gateway's %s", g, got, siteHold)
		}
	}

	// Flows between the on-prem host and the cloud node, from several of
	// the cloud node's addresses: the router hashes each onto a gateway
	// by its addresses and ports, the cloud side onto a tunnel by its
	// addresses, so that some cross the lost gateway one way only.
	type flowOf struct {
		src     netip.Addr
		probe   *Probe
		hop     netip.Addr // the router's next hop towards src
		cloudIn bool       // the cloud side sends it into the lost gateway's tunnel
	}
	var flows []*flowOf
	cloudHost := lab.sides[1].Host
	for k := 0; k < flowCount; k++ {
		src := cloudHost
		if k > 0 {
			src = netip.AddrFrom4([4]byte{cloudHost.As4()[0], cloudHost.As4()[1], cloudHost.As4()[2], cloudHost.As4()[3] + byte(10+k)})
			lab.AddHostAddr(1, src)
		}
		p := lab.StartProbeFrom(src, 50*time.Millisecond)
		defer p.Stop()
		flows = append(flows, &flowOf{src: src, probe: p})
	}
	time.Sleep(time.Second)
	for _, f := range flows {
		if n, gap := f.probe.Replies(time.Now().Add(-900 * time.Millisecond)); n == 0 {
			t.Fatalf("the cloud node's %s does not reach the control plane's address %s (no echo for %s)", f.src, r.cp, gap)
		}
		echo, sender := f.probe.Ports()
		f.hop = lab.SitePathOf(f.src, echo, sender)
	}
	// The gateway lost: the one the router sends the first flow to.
	lost := slices.Index(gwLAN, flows[0].hop)
	if lost < 0 {
		t.Fatalf("the site's router sends the flow to %s through %s, not a gateway", flows[0].src, flows[0].hop)
	}
	side := []int{0, 2}[lost] // the lab's sides: a, the cloud, b
	lostTunnel := cloudTunnelTo(cloud, lab.sides[side].Tunnels[0].Local)
	for _, f := range flows {
		f.cloudIn = lab.PathFrom(1, f.src, r.cp) == lostTunnel
	}
	survivor := gwLAN[1-lost]

	lost0 := time.Now()
	lab.Kill(side)
	var left time.Duration
	for time.Since(lost0) < siteHold+10*time.Second {
		if hops := lab.SiteNextHops(cloudRange); len(hops) == 1 && hops[0] == survivor {
			left = time.Since(lost0)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("gateway %s lost: the site's router dropped it after %s (the session's hold time %s)", gwLAN[lost], left.Round(10*time.Millisecond), siteHold)
	if left == 0 {
		t.Errorf("%s after the gateway %s was lost, the site's router routes %s through %v, want %s only", siteHold+10*time.Second, gwLAN[lost], cloudRange, lab.SiteNextHops(cloudRange), survivor)
	} else if left > siteHold+2*time.Second {
		t.Errorf("the site's router dropped the lost gateway after %s, more than the hold time %s", left, siteHold)
	}

	// Each flow runs again once every side that sent it to the lost
	// gateway has dropped it: the router at the site session's hold time,
	// the cloud side at the Cloud Router's; a flow that crossed neither
	// way is not interrupted.
	for _, f := range flows {
		siteIn := f.hop == gwLAN[lost]
		var bound, least time.Duration
		how := "through the other gateway both ways"
		switch {
		case f.cloudIn:
			bound, least = cloudHold+3*time.Second, cloudHold-time.Duration(v.Keepalive)*time.Second-2*time.Second
			how = "into the lost gateway's tunnel from the cloud side"
			if siteIn {
				how += " and to the lost gateway from the site"
			}
		case siteIn:
			bound, least = siteHold+2*time.Second, siteHold-siteKeepalive-time.Second
			how = "to the lost gateway from the site only"
		default:
			bound = time.Second
		}
		f.probe.AwaitFlowing(bound + 10*time.Second - time.Since(lost0))
		n, gap := f.probe.Replies(lost0)
		t.Logf("flow from %s, %s: stopped for %s, %d echoes since", f.src, how, gap.Round(10*time.Millisecond), n)
		if gap > bound {
			t.Errorf("the flow from %s (%s) stopped for %s after the gateway was lost, more than %s", f.src, how, gap, bound)
		}
		if gap < least {
			t.Errorf("the flow from %s (%s) stopped for %s only: did it cross the lost gateway? (it waits for a hold time: at least %s)", f.src, how, gap, least)
		}
	}
}

// flowCount is how many flows TestRenderedVPNGatewayLost runs: enough
// that the router's and the cloud side's hashing put some across the
// lost gateway one way only.
const flowCount = 8

// cloudTunnelTo is the cloud side's tunnel device to the on-prem address
// peer.
func cloudTunnelTo(cloud Side, peer netip.Addr) string {
	for _, tn := range cloud.Tunnels {
		if tn.Remote == peer {
			return tn.IfName
		}
	}
	return ""
}

// siteHoldTime is the hold time of the site's router's BGP session with
// the gateway at addr, as FRR negotiated it.
func (l *Lab) siteHoldTime(addr netip.Addr) time.Duration {
	l.t.Helper()
	out, err := l.query("vtysh", "--vty_socket", l.site.frrDir, "-c", "show bgp neighbors "+addr.String()+" json")
	if err != nil {
		l.t.Fatalf("vpnlab: show bgp neighbors: %v\n%s", err, out)
	}
	var n map[string]struct {
		Hold int `json:"bgpTimerHoldTimeMsecs"`
	}
	if err := json.Unmarshal(out, &n); err != nil {
		l.t.Fatalf("vpnlab: show bgp neighbors json: %v\n%s", err, out)
	}
	return time.Duration(n[addr.String()].Hold) * time.Millisecond
}
