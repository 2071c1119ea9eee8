//go:build linux

package vpnlab

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// rendered is a source with a VPN to one on-prem gateway, rendered.
type rendered struct {
	out     string
	vpn     *model.VPN
	network *model.GCPNetwork
	cp      netip.Addr // the control plane's address
	gwDir   string     // out/onprem/vpn/<the first gateway>/
	gwDirs  []string   // out/onprem/vpn/<each gateway>/, in the source's order
}

// oneGateway is the shipped example's VPN with both tunnels ending on a
// single on-prem gateway (SINGLE_IP_INTERNALLY_REDUNDANT): the topology
// whose failover the gateway's own BGP decides, which the lab can run
// with nothing added. (With two gateways, the site's router picks the
// gateway: TestRenderedVPNGatewayLost.)
func oneGateway(t *testing.T) rendered {
	t.Helper()
	r := render(t, oneGatewaySource(t))
	if len(r.gwDirs) != 1 {
		t.Fatalf("out/onprem/vpn/ holds %v, want one gateway", r.gwDirs)
	}
	return r
}

// oneGatewaySource writes oneGateway's source and returns its folder.
func oneGatewaySource(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := testsrc.CopyShippedTo(dir); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "cluster.cue")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	two := "\t\t\t\t\t{name: \"vpn-gw-a\", address: \"203.0.113.10\"},\n\t\t\t\t\t{name: \"vpn-gw-b\", address: \"203.0.113.11\"},\n"
	if !bytes.Contains(b, []byte(two)) {
		t.Fatalf("%s: the fixture's two peer gateways are not where this test expects them", f)
	}
	b = bytes.Replace(b, []byte(two), []byte("\t\t\t\t\t{name: \"vpn-gw-a\", address: \"203.0.113.10\"},\n"), 1)
	// No site router: the one-gateway lab's LAN has the gateway and the
	// host only (the gateway has the router's address there).
	site := siteBGPLine.Find(b)
	if site == nil {
		t.Fatalf("%s: the fixture's siteBGP is not where this test expects it", f)
	}
	b = bytes.Replace(b, site, nil, 1)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// siteBGPLine is the shipped example's siteBGP, on one line.
var siteBGPLine = regexp.MustCompile(`(?m)^\s*siteBGP: \{.*\}\n`)

func render(t *testing.T, dir string) rendered {
	t.Helper()
	res, err := pipeline.Run(dir, pipeline.Options{})
	if err != nil {
		t.Fatalf("rendering %s: %v", dir, err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := outdir.WriteWith(out, res.Files, outdir.Options{}); err != nil {
		t.Fatalf("writing %s: %v", out, err)
	}
	src := res.Source.Fleet.Clusters[0]
	n := src.Cluster.GCP.Network
	if n.VPN == nil {
		t.Fatal("the fixture declares no VPN")
	}
	host, _, ok := strings.Cut(src.Cluster.ControlPlaneEndpoint, ":")
	if !ok {
		t.Fatalf("controlPlaneEndpoint %q", src.Cluster.ControlPlaneEndpoint)
	}
	var gws []string
	for _, g := range n.VPN.PeerGateways {
		d := filepath.Join(out, filepath.FromSlash(layout.OnpremVPNGatewayDir(g.Name)))
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("the gateway %s's files: %v", g.Name, err)
		}
		gws = append(gws, d)
	}
	return rendered{out: out, vpn: n.VPN, network: n, cp: netip.MustParseAddr(host), gwDir: gws[0], gwDirs: gws}
}

// The nodes' NIC MTUs: an on-prem node's Ethernet, and a GCE VM's in a
// VPC of the default MTU (Google, "Maximum transmission unit").
const (
	onpremNICMTU = 1500
	vpcMTU       = 1460
)

// lan returns the first address of prefix as a gateway's LAN address, and
// the prefix.
func lan(t *testing.T, cidr string) netip.Prefix {
	t.Helper()
	p := netip.MustParsePrefix(cidr).Masked()
	return netip.PrefixFrom(p.Addr().Next(), p.Bits())
}

// sides builds both ends from r: the on-prem gateway from its rendered
// files, the Cloud VPN and Cloud Router stand-in from the rendered
// Terraform, each with the same random pre-shared key per tunnel (as
// Secret Manager would hand both). edit may change the on-prem files
// first.
func (r rendered) sides(t *testing.T) (onprem, cloud Side, cloudHost netip.Addr, v CloudVPN) {
	t.Helper()
	return r.sidesWith(t, psks{})
}

// psks are the pre-shared keys by Secret Manager secret, each made at
// random when first asked for.
type psks map[string]string

func (p psks) key(secret string) string {
	if p[secret] == "" {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		p[secret] = hex.EncodeToString(b)
	}
	return p[secret]
}

// sidesWith is sides with the keys of keys.
func (r rendered) sidesWith(t *testing.T, keys psks) (onprem, cloud Side, cloudHost netip.Addr, v CloudVPN) {
	t.Helper()
	key := keys.key
	// The on-prem side names a tunnel's key by its connection (tunnel<i>,
	// docs/vpn.md), the cloud side by the secret of HA VPN interface i.
	secretOf := map[string]string{}
	for i, tn := range r.vpn.Tunnels {
		secretOf[model.TunnelName(i)] = tn.SharedSecret.Secret
	}
	var err error
	onprem, err = onpremSide(r.gwDir, func(conn string) string { return key(secretOf[conn]) }, lan(t, r.network.OnpremRanges[0]), r.cp)
	if err != nil {
		t.Fatal(err)
	}
	if v, err = cloudFromTerraform(filepath.Join(r.out, "terraform")); err != nil {
		t.Fatal(err)
	}
	var addrs []netip.Addr
	for _, a := range r.vpn.HAVPNAddresses {
		addrs = append(addrs, netip.MustParseAddr(a))
	}
	gw := lan(t, r.network.SubnetworkRange)
	cloudHost = gw.Addr().Next().Next().Next()
	if cloud, err = cloudSide(v, addrs, key, gw, cloudHost); err != nil {
		t.Fatal(err)
	}
	onprem.LANMTU, cloud.LANMTU = onpremNICMTU, vpcMTU
	return onprem, cloud, cloudHost, v
}

// upLab starts the lab from the rendered files of oneGateway's source
// and waits until both tunnels are up and both sides route over both.
func upLab(t *testing.T) (r rendered, lab *Lab, cloud Side, v CloudVPN, cloudRange, onpremRange netip.Prefix) {
	t.Helper()
	requireLab(t)
	r = oneGateway(t)
	onprem, cloud, _, v := r.sides(t)
	for _, want := range []string{"timers " + itoa(v.Keepalive) + " " + itoa(3*v.Keepalive)} {
		if !bytes.Contains(onprem.FRR, []byte(want)) {
			t.Fatalf("the on-prem frr.conf has no %q: the sides' BGP timers disagree", want)
		}
	}
	start := time.Now()
	lab = startLab(t, onprem, cloud)
	if err := lab.WaitUp(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	cloudRange = netip.MustParsePrefix(r.network.SubnetworkRange)
	onpremRange = netip.MustParsePrefix(r.network.OnpremRanges[0])
	if err := lab.WaitRoutes(0, cloudRange, 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitRoutes(1, onpremRange, 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Duration(envInt("VPNLAB_PAUSE")) * time.Second)
	t.Logf("both tunnels up, BGP established, both sides routing over both: up after %s", time.Since(start).Round(100*time.Millisecond))
	return r, lab, cloud, v, cloudRange, onpremRange
}

// flow starts the probe of a flow from a cloud node to the control
// plane's address and checks that it gets echoes.
func flow(t *testing.T, lab *Lab, r rendered) *Probe {
	t.Helper()
	probe := lab.StartProbe(50 * time.Millisecond)
	time.Sleep(time.Second)
	if n, gap := probe.Replies(time.Now().Add(-900 * time.Millisecond)); n == 0 {
		probe.Stop()
		t.Fatalf("a cloud node does not reach the control plane's address %s (no echo for %s)", r.cp, gap)
	}
	return probe
}

// TestRenderedVPN runs the rendered on-prem gateway (strongSwan and FRR
// as out/onprem/vpn/ configures them) against a stand-in for Cloud VPN
// and the Cloud Router configured from out/terraform/vpn.tf: both tunnels
// come up and carry BGP, each side learns the other's prefixes over both,
// a cloud node reaches the control plane's address; when the tunnel
// carrying that flow is cut, the flow moves to the other tunnel once the
// BGP hold time the source sets runs out (Cloud Router runs no BFD on HA
// VPN tunnels). TestRenderedVPNWithdrawn cuts both.
func TestRenderedVPN(t *testing.T) {
	t.Parallel()
	r, lab, cloud, v, _, onpremRange := upLab(t)
	hold := time.Duration(3*v.Keepalive) * time.Second
	keepalive := time.Duration(v.Keepalive) * time.Second
	probe := flow(t, lab, r)
	defer probe.Stop()

	used := lab.PathOf(1, r.cp)
	j := -1
	for k, tn := range cloud.Tunnels {
		if tn.IfName == used {
			j = k
		}
	}
	if j < 0 {
		t.Fatalf("the cloud side sends to %s through %s, no tunnel", r.cp, used)
	}
	cut := time.Now()
	lab.Cut(j)
	// The flow is back once a BGP session's hold time has run out and
	// the other tunnel carries it.
	deadline := cut.Add(hold + 10*time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		if n, gap := probe.Replies(time.Now().Add(-time.Second)); n > 10 && gap < 300*time.Millisecond && time.Since(cut) > time.Second {
			break
		}
	}
	n, gap := probe.Replies(cut)
	t.Logf("tunnel %s cut: the control plane unreachable from the cloud node for %s (BGP keepalive %s, hold time %s); %d echoes since", cloud.Tunnels[j].Conn, gap.Round(10*time.Millisecond), keepalive, hold, n)
	if gap > hold+3*time.Second {
		t.Errorf("the flow took %s to fail over, more than the hold time %s", gap, hold)
	}
	if gap < hold-keepalive-2*time.Second {
		t.Errorf("the flow was interrupted for %s only: did it cross the cut tunnel? (the hold time is %s)", gap, hold)
	}
	if devs := lab.RouteDevs(1, onpremRange); len(devs) != 1 || devs[0] == used {
		t.Errorf("after the cut the cloud side routes %s through %v, want the other tunnel only", onpremRange, devs)
	}
}

// TestRenderedVPNWithdrawn: on the lab of TestRenderedVPN, with both
// tunnels cut, each side withdraws the other's routes once the hold time
// runs out.
func TestRenderedVPNWithdrawn(t *testing.T) {
	t.Parallel()
	_, lab, cloud, v, cloudRange, onpremRange := upLab(t)
	hold := time.Duration(3*v.Keepalive) * time.Second
	both := time.Now()
	for j := range cloud.Tunnels {
		lab.Cut(j)
	}
	deadline := both.Add(hold + 10*time.Second)
	for time.Now().Before(deadline) && (len(lab.RouteDevs(0, cloudRange)) > 0 || len(lab.RouteDevs(1, onpremRange)) > 0) {
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("both tunnels cut: routes withdrawn after %s", time.Since(both).Round(100*time.Millisecond))
	if devs := lab.RouteDevs(0, cloudRange); len(devs) > 0 {
		t.Errorf("both tunnels cut, the on-prem gateway still routes %s through %v", cloudRange, devs)
	}
	if devs := lab.RouteDevs(1, onpremRange); len(devs) > 0 {
		t.Errorf("both tunnels cut, the cloud side still routes %s through %v", onpremRange, devs)
	}
}

// TestRenderedVPNDisagree shows the lab fails when the two ends disagree:
// the on-prem files changed as a renderer bug would change them, each
// change keeps the VPN from coming up.
func TestRenderedVPNDisagree(t *testing.T) {
	requireLab(t)
	t.Parallel()
	r := oneGateway(t)
	asn := "remote-as " + itoa(r.vpn.CloudRouterASN)
	for _, c := range []struct {
		name, file, from, to string
	}{
		{"the Cloud Router's ASN", "frr.conf", asn, "remote-as " + itoa(r.vpn.CloudRouterASN+1)},
		{"an IKE proposal Cloud VPN does not support", "conf.d/tunnel0.conf", "proposals = " + r.vpn.IKEProposal, "proposals = chacha20poly1305-prfsha256-curve25519"},
		// Google's table lists HMAC-SHA2-384-192 for phase 1 only.
		{"an ESP proposal Cloud VPN does not negotiate", "conf.d/tunnel0.conf", "esp_proposals = " + r.vpn.ESPProposal, "esp_proposals = aes256-sha384-modp2048"},
		{"the on-prem inside address", "systemd-network/vpn-tunnel0.network", "Address=", "Address=169.254.99.2/30\n#"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := filepath.Join(r.gwDir, filepath.FromSlash(c.file))
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(c.from)) {
				t.Fatalf("%s holds no %q", c.file, c.from)
			}
			changed := r
			changed.gwDir = filepath.Join(t.TempDir(), "gw")
			if err := copyTree(r.gwDir, changed.gwDir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(changed.gwDir, filepath.FromSlash(c.file)), bytes.ReplaceAll(b, []byte(c.from), []byte(c.to)), 0o644); err != nil {
				t.Fatal(err)
			}
			onprem, cloud, _, _ := changed.sides(t)
			lab, err := TryStart(t, onprem, cloud)
			if err == nil {
				err = lab.WaitUp(20 * time.Second)
			}
			if err == nil {
				t.Fatalf("with %s changed on the on-prem side, the VPN still came up", c.name)
			}
			t.Logf("with %s changed: %v", c.name, err)
		})
	}
}

func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

func envInt(k string) int { n, _ := strconv.Atoi(os.Getenv(k)); return n }
