//go:build linux

// Package vpnlab runs both ends of the site-to-site VPN with real
// software, each end in a network namespace of its own: strongSwan's
// charon (loaded with swanctl) for the IPsec tunnels and FRR's zebra,
// bgpd and bfdd for BGP and BFD over them. Behind each gateway sits a host
// of the side's LAN; the gateways meet over a veth pair that stands in for
// the internet. Nothing outside the test's own namespaces is contacted.
//
// The kernel of a test machine may lack ESP, XFRM interfaces and VTI
// (containers and microVMs often do), so charon runs with strongSwan's
// kernel-libipsec plugin: ESP in user space, UDP-encapsulated, delivered
// through a TUN device per charon. A route-based tunnel then needs a
// device of its own, so each tunnel of a side gets its own charon: the
// charon of tunnel i listens on ports 500+10000·i and 4500+10000·i, and
// nftables maps those to 500 and 4500 on the wire, so each peer sees the
// standard ports. Each TUN device is made with the interface name the
// side's rendered configuration routes over (tunShim) and given the
// tunnel's inside address and MTU, as an XFRM interface would be.
package vpnlab

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// EnvRequire, "1", makes missing tools fail the tests instead of skipping
// them (CI sets it).
const EnvRequire = "NODEGEN_REQUIRE_VPNLAB"

// Tools the lab runs, from Debian's strongswan-charon, strongswan-swanctl,
// libcharon-extra-plugins (kernel-libipsec), frr, iproute2 and nftables.
var (
	charonBin = "/usr/lib/ipsec/charon"
	libipsec  = "/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so"
	frrDir    = "/usr/lib/frr"
)

// requireLab skips the test unless the machine can run the lab, or fails it
// when EnvRequire is "1".
func requireLab(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range []string{"ip", "nft", "swanctl", "vtysh", "cc"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	for _, f := range []string{charonBin, libipsec, filepath.Join(frrDir, "zebra"), filepath.Join(frrDir, "bgpd"), filepath.Join(frrDir, "bfdd")} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("vpnlab needs %s (apt-get install strongswan-charon strongswan-swanctl libcharon-extra-plugins frr iproute2 nftables gcc libc6-dev)", strings.Join(missing, ", "))
	if os.Getenv(EnvRequire) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Tunnel is one end of one IPsec tunnel.
type Tunnel struct {
	// Conn is the connection's name in Swanctl.
	Conn string
	// IfName is the interface the side's routing configuration uses for
	// the tunnel.
	IfName string
	// Inside is this end's inside address with the link's prefix length.
	Inside netip.Prefix
	// Local and Remote are the public addresses of this end and the peer.
	Local, Remote netip.Addr
	// Swanctl is a swanctl.conf holding this tunnel's connection and its
	// pre-shared key, and nothing else.
	Swanctl []byte
	// MTU is the tunnel device's MTU; 0 is an XFRM interface's default,
	// 1500. (On a CloudVPN side the payload MTU of the negotiated ESP
	// algorithm replaces it.)
	MTU int
}

// Side is one end of the VPN: a gateway with its tunnels and its routing,
// and a host on its LAN.
type Side struct {
	// Name is short ([a-z]{1,4}): it names the side's namespaces.
	Name    string
	Tunnels []Tunnel
	// Charon holds settings added to each charon's strongswan.conf.
	Charon []byte
	// FRR is the gateway's frr.conf, applied with vtysh.
	FRR []byte
	// Gateway is the gateway's LAN address with the LAN's prefix length;
	// Host is the host's address on that LAN.
	Gateway netip.Prefix
	Host    netip.Addr
	// LANMTU is the MTU of the LAN between the gateway and the host (the
	// host's NIC); 0 is 1500.
	LANMTU int
	// CloudVPN makes the gateway behave as Cloud VPN does with packets
	// that do not fit (cloudVPNLimits): it drops ESP fragmented after
	// encapsulation and ESP over the gateway MTU, and each tunnel carries
	// at most the payload MTU of its negotiated ESP algorithm.
	CloudVPN bool
	// MSSClamp is an nftables file the gateway loads as written once its
	// network is up (the on-prem gateway's rendered MSS clamp); nil for
	// none. SetMSSClamp removes and loads it again.
	MSSClamp []byte
}

// xfrmDefaultMTU is the MTU of an XFRM interface made without one:
// ETH_DATA_LEN (linux v6.18 net/xfrm/xfrm_interface_core.c,
// xfrmi_dev_setup). kernel-libipsec's TUN devices start at 1400 instead
// (strongSwan 5.9.8
// src/libcharon/plugins/kernel_libipsec/kernel_libipsec_plugin.c,
// TUN_DEFAULT_MTU), so the lab sets every tunnel device's MTU itself.
const xfrmDefaultMTU = 1500

func (s Side) lanMTU() int {
	if s.LANMTU == 0 {
		return 1500
	}
	return s.LANMTU
}

// Lab is a running VPN.
type Lab struct {
	t   testing.TB
	dir string
	id  string
	// sides are the first side (the on-prem gateway), the second (the
	// cloud side) and, with a Site, the second on-prem gateway.
	sides []*side
	// site is the site's router (startSite); nil without a Site.
	site *side

	mu     sync.Mutex
	cuts   map[int]bool
	exited []exit
}

type side struct {
	Side
	gw, host string // namespace names
	pod      string // the pod's namespace, once StartPods made it
	charons  []*charon
	frrDir   string
	procs    []*exec.Cmd // every daemon of the gateway
	frrProcs []*exec.Cmd // FRR's
	mtus     []int       // each tunnel device's MTU as set
}

type charon struct {
	dir  string
	vici string
	tun  string // the TUN device's name as made
	cmd  *exec.Cmd
}

// tunShim is preloaded into every charon: it makes kernel-libipsec's TUN
// device with the tunnel's interface name and read packets of up to
// tunRead bytes (shim/tun.c says why).
//
//go:embed shim/tun.c
var tunShim []byte

// tunRead is the largest packet charon reads whole from a tunnel device,
// and so the largest MTU the lab gives one: the LANs' and the wire's.
const tunRead = 1500

var idSeq struct {
	sync.Mutex
	n int
}

// tunnelTimeout bounds the wait for the CHILD_SAs at start.
const tunnelTimeout = 20 * time.Second

// startLab builds the namespaces, starts charon for each tunnel, loads the
// connections, waits for every CHILD_SA, then starts FRR and applies its
// configuration; it does not wait for BGP (see WaitUp).
// Everything is removed when the test ends.
func startLab(t testing.TB, a, b Side) *Lab {
	t.Helper()
	l, err := TryStart(t, a, b)
	if err != nil {
		t.Fatalf("vpnlab: %v", err)
	}
	return l
}

// TryStart is startLab, returning the error when a tunnel does not come up.
func TryStart(t testing.TB, a, b Side) (*Lab, error) {
	t.Helper()
	return start(t, []Side{a, b}, nil)
}

// Site is the on-prem LAN of a lab with two on-prem gateways: both
// gateways, the first gateway's host and the site's router on one
// segment (a bridge in the router's namespace). The host's default route
// is the router, and the router routes as its frr.conf makes it.
type Site struct {
	// Router is the router's address on the LAN, with the LAN's prefix
	// length.
	Router netip.Prefix
	// FRR is the router's frr.conf, applied with vtysh.
	FRR []byte
}

// startSite is startLab with two on-prem gateways, a and b (each with its
// tunnels to cloud), on site's LAN: the host is a's Host, b has none of
// its own. The lab's sides are a (0), cloud (1) and b (2). It waits for
// every CHILD_SA and starts every FRR, the router's last; not for BGP.
func startSite(t testing.TB, a, cloud, b Side, site Site) (*Lab, error) {
	t.Helper()
	return start(t, []Side{a, cloud, b}, &site)
}

func start(t testing.TB, sides []Side, site *Site) (*Lab, error) {
	t.Helper()
	idSeq.Lock()
	idSeq.n++
	id := fmt.Sprintf("nv%d%d", os.Getpid()%10000, idSeq.n)
	idSeq.Unlock()
	l := &Lab{t: t, dir: t.TempDir(), id: id, cuts: map[int]bool{}}
	for i, s := range sides {
		if len(s.Tunnels) == 0 || len(s.Tunnels) > 4 {
			t.Fatalf("vpnlab: side %q has %d tunnels (1 to 4)", s.Name, len(s.Tunnels))
		}
		sd := &side{Side: s, gw: id + "-" + s.Name + "-gw", host: id + "-" + s.Name + "-h"}
		if site != nil && i == 2 {
			sd.host = "" // the site's host is the first side's
		}
		l.sides = append(l.sides, sd)
	}
	if site != nil {
		l.site = &side{Side: Side{Name: "rt", FRR: site.FRR, Gateway: site.Router}, gw: id + "-rt-gw"}
	}
	t.Cleanup(l.stop)
	l.buildShim()
	l.network()
	for _, s := range l.sides {
		l.startCharons(s)
	}
	// The cloud side (the responder, as Cloud VPN is) first.
	l.loadCharons(l.sides[1])
	for i, s := range l.sides {
		if i != 1 {
			l.loadCharons(s)
		}
	}
	if err := l.waitInstalled(tunnelTimeout); err != nil {
		return l, err
	}
	for _, s := range l.sides {
		l.tunnelDevices(s)
	}
	for _, s := range l.sides {
		l.startFRR(s)
	}
	if l.site != nil {
		l.startFRR(l.site)
	}
	return l, nil
}

// buildShim compiles tunShim into the lab's folder.
func (l *Lab) buildShim() {
	src := filepath.Join(l.dir, "tun.c")
	l.write(src, tunShim)
	l.run("", "cc", "-shared", "-fPIC", "-Wall", "-Werror", "-o", filepath.Join(l.dir, "tun.so"), src, "-ldl")
}

// network creates the namespaces, the wire between the gateways, the
// LANs and the port maps of the charons past the first.
func (l *Lab) network() {
	cloud := l.sides[1]
	for _, s := range l.sides {
		for _, ns := range []string{s.gw, s.host} {
			if ns == "" {
				continue
			}
			l.run("", "ip", "netns", "add", ns)
			l.run(ns, "ip", "link", "set", "lo", "up")
		}
		l.run(s.gw, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	}
	// A wire from each on-prem gateway to the cloud side's: "wan" at both
	// ends of the first, "wan<i>" at the cloud end of side i's.
	wans := map[*side][]string{}
	wanTo := map[netip.Addr]string{} // the cloud side's device to a peer's address
	for i, s := range l.sides {
		if i == 1 {
			continue
		}
		cw := "wan"
		if i > 0 {
			cw = "wan" + itoa(i)
		}
		l.run("", "ip", "link", "add", "wan", "netns", s.gw, "type", "veth", "peer", "name", cw, "netns", cloud.gw)
		wans[s] = []string{"wan"}
		wans[cloud] = append(wans[cloud], cw)
		for _, tn := range s.Tunnels {
			wanTo[tn.Local] = cw
		}
	}
	for _, s := range l.sides {
		for _, w := range wans[s] {
			l.run(s.gw, "ip", "link", "set", w, "up")
		}
		seen := map[netip.Addr]bool{}
		for _, tn := range s.Tunnels {
			if !seen[tn.Local] {
				seen[tn.Local] = true
				l.run(s.gw, "ip", "addr", "add", tn.Local.String()+"/32", "dev", wans[s][0])
			}
		}
		routed := map[netip.Addr]bool{}
		for _, tn := range s.Tunnels {
			if !routed[tn.Remote] {
				routed[tn.Remote] = true
				dev := "wan"
				if s == cloud {
					dev = wanTo[tn.Remote]
				}
				l.run(s.gw, "ip", "route", "add", tn.Remote.String()+"/32", "dev", dev)
				// The wire to a peer ahead of kernel-libipsec's table 220
				// (rule 220, see dropTable220), which routes everything
				// into a tunnel once its CHILD_SA is installed: a side
				// whose tunnels end on two peers would otherwise send the
				// second peer's IKE into the first tunnel while the
				// tunnels come up.
				l.run(s.gw, "ip", "rule", "add", "to", tn.Remote.String()+"/32", "lookup", "main", "pref", "100")
			}
		}
		if l.site == nil || s == cloud {
			l.run("", "ip", "link", "add", "lan", "netns", s.gw, "type", "veth", "peer", "name", "lan", "netns", s.host)
			// The LAN carries packets of at most its MTU, as a wire does: no
			// GSO packet crosses it whole (gso_max_segs 1 has the sender's
			// kernel segment it), so the gateways see what a NIC sends.
			l.run(s.gw, "ip", "addr", "add", s.Gateway.String(), "dev", "lan")
			l.run(s.gw, "ip", "link", "set", "dev", "lan", "mtu", itoa(s.lanMTU()), "gso_max_segs", "1", "up")
			l.run(s.host, "ip", "addr", "add", netip.PrefixFrom(s.Host, s.Gateway.Bits()).String(), "dev", "lan")
			l.run(s.host, "ip", "link", "set", "dev", "lan", "mtu", itoa(s.lanMTU()), "gso_max_segs", "1", "up")
			l.run(s.host, "ip", "route", "add", "default", "via", s.Gateway.Addr().String())
		}

		var nft strings.Builder
		nft.WriteString("table ip vpnlab_ports {\n\tchain pre {\n\t\ttype nat hook prerouting priority dstnat;\n")
		for i, tn := range s.Tunnels[1:] {
			off := 10000 * (i + 1)
			fmt.Fprintf(&nft, "\t\tip saddr %s ip daddr %s udp dport 500 dnat to :%d\n", tn.Remote, tn.Local, 500+off)
			fmt.Fprintf(&nft, "\t\tip saddr %s ip daddr %s udp dport 4500 dnat to :%d\n", tn.Remote, tn.Local, 4500+off)
		}
		nft.WriteString("\t}\n\tchain post {\n\t\ttype nat hook postrouting priority srcnat;\n")
		for i, tn := range s.Tunnels[1:] {
			off := 10000 * (i + 1)
			fmt.Fprintf(&nft, "\t\tip saddr %s ip daddr %s udp sport %d snat to :500\n", tn.Local, tn.Remote, 500+off)
			fmt.Fprintf(&nft, "\t\tip saddr %s ip daddr %s udp sport %d snat to :4500\n", tn.Local, tn.Remote, 4500+off)
		}
		nft.WriteString("\t}\n}\n")
		f := filepath.Join(l.dir, s.Name+"-ports.nft")
		l.write(f, []byte(nft.String()))
		l.run(s.gw, "nft", "-f", f)
		if s.CloudVPN {
			f := filepath.Join(l.dir, s.Name+"-gateway-mtu.nft")
			l.write(f, []byte(cloudVPNWire))
			l.run(s.gw, "nft", "-f", f)
		}
		if s.MSSClamp != nil {
			l.write(l.mssClampFile(s), s.MSSClamp)
			l.run(s.gw, "nft", "-f", l.mssClampFile(s))
		}
	}
	if l.site != nil {
		l.siteLAN()
	}
}

// siteLAN builds the site's LAN: a bridge "lan" in the router's
// namespace, a port to each on-prem gateway's "lan" and one to the host's,
// at the first side's LAN MTU. The router sends no ICMP redirects: a
// host that took one would send straight to a gateway, past the router's
// choice, as a site whose hosts are on another segment than its gateways
// never does.
func (l *Lab) siteLAN() {
	r := l.site
	host := l.sides[0]
	mtu := itoa(host.lanMTU())
	l.run("", "ip", "netns", "add", r.gw)
	l.run(r.gw, "ip", "link", "set", "lo", "up")
	// It hashes a flow onto a next hop by its addresses and ports, as
	// routers commonly do (fib_multipath_hash_policy 1): the flows between
	// two hosts spread over both gateways.
	for _, k := range []string{"net.ipv4.ip_forward=1", "net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.default.send_redirects=0", "net.ipv4.fib_multipath_hash_policy=1"} {
		l.run(r.gw, "sysctl", "-qw", k)
	}
	l.run(r.gw, "ip", "link", "add", "lan", "type", "bridge")
	l.run(r.gw, "ip", "addr", "add", r.Gateway.String(), "dev", "lan")
	port := func(ns, name string, addr netip.Prefix) {
		l.run("", "ip", "link", "add", "lan", "netns", ns, "type", "veth", "peer", "name", name, "netns", r.gw)
		l.run(r.gw, "ip", "link", "set", "dev", name, "master", "lan", "mtu", mtu, "gso_max_segs", "1", "up")
		l.run(ns, "ip", "addr", "add", addr.String(), "dev", "lan")
		l.run(ns, "ip", "link", "set", "dev", "lan", "mtu", mtu, "gso_max_segs", "1", "up")
	}
	for i, s := range l.sides {
		if i != 1 {
			port(s.gw, "p"+s.Name, s.Gateway)
		}
	}
	port(host.host, "phost", netip.PrefixFrom(host.Host, r.Gateway.Bits()))
	l.run(r.gw, "ip", "link", "set", "dev", "lan", "mtu", mtu, "up")
	l.run(r.gw, "sysctl", "-qw", "net.ipv4.conf.lan.send_redirects=0")
	l.run(host.host, "ip", "route", "add", "default", "via", r.Gateway.Addr().String())
}

func (l *Lab) mssClampFile(s *side) string { return filepath.Join(l.dir, s.Name+"-mss-clamp.nft") }

var nftTable = regexp.MustCompile(`(?m)^table (\S+ \S+) \{`)

// SetMSSClamp loads side i's MSSClamp (on) or deletes the table it
// defines (off).
func (l *Lab) SetMSSClamp(i int, on bool) {
	l.t.Helper()
	s := l.sides[i]
	m := nftTable.FindSubmatch(s.MSSClamp)
	if m == nil {
		l.t.Fatalf("vpnlab: side %s's MSS clamp defines no table", s.Name)
	}
	if on {
		l.run(s.gw, "nft", "-f", l.mssClampFile(s))
	} else {
		l.run(s.gw, "nft", "delete", "table", strings.Fields(string(m[1]))[0], strings.Fields(string(m[1]))[1])
	}
}

// DropFragNeeded makes side i's host drop every ICMP "fragmentation
// needed" it receives, as a host or site firewall that filters ICMP does:
// path MTU discovery then never lowers what its TCP sends.
func (l *Lab) DropFragNeeded(i int) {
	l.t.Helper()
	f := filepath.Join(l.dir, l.sides[i].Name+"-drop-frag-needed.nft")
	l.write(f, []byte("table ip vpnlab_icmp {\n\tchain in {\n\t\ttype filter hook input priority filter;\n\t\ticmp type destination-unreachable icmp code frag-needed counter drop\n\t}\n}\n"))
	l.run(l.sides[i].host, "nft", "-f", f)
}

var tunLine = regexp.MustCompile(`created TUN device: (\S+)`)

// startCharons starts one charon per tunnel, one after the other, and
// notes the TUN device each made.
func (l *Lab) startCharons(s *side) {
	for i := range s.Tunnels {
		dir := filepath.Join(l.dir, fmt.Sprintf("%s-charon%d", s.Name, i))
		for _, d := range []string{"x509", "x509ca", "x509ocsp", "private", "rsa", "ecdsa", "pkcs8", "pkcs12", "pubkey", "x509aa", "x509ac", "x509crl"} {
			if err := os.MkdirAll(filepath.Join(dir, "swanctl", d), 0o700); err != nil {
				l.t.Fatal(err)
			}
		}
		c := &charon{dir: dir, vici: "unix://" + filepath.Join(dir, "charon.vici")}
		conf := fmt.Sprintf(`charon {
	load = random nonce kdf aes sha1 sha2 hmac gcm gmp pem pkcs1 x509 pubkey kernel-libipsec kernel-netlink socket-default vici updown
	port = %d
	port_nat_t = %d
	install_virtual_ip = no
	filelog {
		stderr {
			default = 1
			time_format = %%H:%%M:%%S
		}
	}
	plugins {
		vici {
			socket = %s
		}
	}
}
`, 500+10000*i, 4500+10000*i, c.vici)
		if len(s.Charon) > 0 {
			extra := filepath.Join(dir, "extra.conf")
			l.write(extra, s.Charon)
			conf += "include " + extra + "\n"
		}
		confFile := filepath.Join(dir, "strongswan.conf")
		l.write(confFile, []byte(conf))
		logFile := filepath.Join(dir, "charon.log")
		// charon keeps its pid file in /run: a private /run per charon.
		env := []string{"STRONGSWAN_CONF=" + confFile, "LD_PRELOAD=" + filepath.Join(l.dir, "tun.so"),
			"VPNLAB_TUN_NAME=" + s.Tunnels[i].IfName, "VPNLAB_TUN_READ=" + itoa(tunRead)}
		cmd := l.daemon(s.gw, logFile, env,
			"unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /run && exec "+charonBin)
		s.procs = append(s.procs, cmd)
		c.cmd = cmd
		c.tun = l.waitLog(logFile, tunLine, 10*time.Second)
		s.charons = append(s.charons, c)
	}
}

// tunnelDevices gives each tunnel's TUN device, made with the interface
// name the side's configuration expects (tunShim), the tunnel's inside
// address, once the CHILD_SAs are installed.
//
// Each device gets the tunnel's MTU: on a CloudVPN side the payload MTU
// of the ESP algorithm its CHILD_SA negotiated, elsewhere Tunnel.MTU.
func (l *Lab) tunnelDevices(s *side) {
	s.mtus = make([]int, len(s.Tunnels))
	for i, tn := range s.Tunnels {
		tun := s.charons[i].tun
		mtu := tn.MTU
		if mtu == 0 {
			mtu = xfrmDefaultMTU
		}
		if s.CloudVPN {
			out := l.run(s.gw, "swanctl", "--list-sas", "--uri", s.charons[i].vici)
			alg := espAlgorithm.FindSubmatch(out)
			if alg == nil {
				l.t.Fatalf("vpnlab: side %s, tunnel %s: no ESP algorithm in swanctl --list-sas:\n%s", s.Name, tn.Conn, out)
			}
			var err error
			if mtu, err = payloadMTU(string(alg[1])); err != nil {
				l.t.Fatalf("vpnlab: side %s, tunnel %s: %v", s.Name, tn.Conn, err)
			}
		}
		if tun != tn.IfName {
			l.t.Fatalf("vpnlab: side %s: charon made TUN device %s for tunnel %s, not %s: is the shim preloaded?", s.Name, tun, tn.Conn, tn.IfName)
		}
		if mtu > tunRead {
			l.t.Fatalf("vpnlab: side %s, tunnel %s: MTU %d, over the %d bytes charon reads whole", s.Name, tn.Conn, mtu, tunRead)
		}
		s.mtus[i] = mtu
		l.run(s.gw, "ip", "link", "set", tn.IfName, "mtu", itoa(mtu))
		l.run(s.gw, "ip", "addr", "add", tn.Inside.String(), "dev", tn.IfName)
	}
	if s.CloudVPN {
		l.payloadLimits(s)
	}
	l.dropTable220(s)
}

// dropTable220 deletes the rule kernel-libipsec adds for its routing
// table 220, through which it routes each traffic selector into its TUN
// device: routing is FRR's here, as it is with XFRM interfaces.
func (l *Lab) dropTable220(s *side) {
	for l.try(s.gw, "ip", "rule", "del", "table", "220") == nil {
	}
}

// startFRR starts zebra, bfdd and bgpd in the gateway's namespace and
// applies the side's frr.conf.
func (l *Lab) startFRR(s *side) {
	// The daemons run as Debian's frr user, which must reach their
	// folder: one of its own, outside the test's private temporary one,
	// kept when they start again (a stopped daemon may leave its files).
	dir := s.frrDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "vpnlab-frr-"); err != nil {
			l.t.Fatal(err)
		}
		l.t.Cleanup(func() { os.RemoveAll(dir) })
		l.run("", "chown", "frr:frr", dir)
	}
	for _, d := range []string{"zebra", "bfdd", "bgpd"} {
		os.Remove(filepath.Join(dir, d+".vty"))
		os.Remove(filepath.Join(dir, d+".pid"))
	}
	os.Remove(filepath.Join(dir, "zserv.api"))
	logs := filepath.Join(l.dir, s.Name+"-frr")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		l.t.Fatal(err)
	}
	s.frrDir = dir
	for _, d := range []string{"zebra", "bfdd", "bgpd"} {
		cmd := l.daemon(s.gw, filepath.Join(logs, d+".log"), nil, filepath.Join(frrDir, d),
			"-f", "/dev/null", "-i", filepath.Join(dir, d+".pid"), "-z", filepath.Join(dir, "zserv.api"),
			"--vty_socket", dir, "-P", "0", "--log", "stdout")
		s.procs = append(s.procs, cmd)
		s.frrProcs = append(s.frrProcs, cmd)
		l.waitFile(filepath.Join(dir, d+".vty"), 10*time.Second)
	}
	conf := filepath.Join(logs, "frr.conf")
	l.write(conf, s.FRR)
	out := l.run(s.gw, "vtysh", "--vty_socket", dir, "-f", conf)
	if bytes.Contains(out, []byte("% ")) {
		l.t.Fatalf("vpnlab: side %s: vtysh refused lines of frr.conf:\n%s", s.Name, out)
	}
}

// daemon starts a long-running process in namespace ns, its output in
// logFile; it is killed when the lab stops.
func (l *Lab) daemon(ns, logFile string, env []string, name string, args ...string) *exec.Cmd {
	l.t.Helper()
	f, err := os.Create(logFile)
	if err != nil {
		l.t.Fatal(err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	f.Close()
	done := make(chan struct{})
	l.mu.Lock()
	l.exited = append(l.exited, exit{name: filepath.Base(filepath.Dir(logFile)) + "/" + filepath.Base(name), done: done, cmd: cmd})
	l.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return cmd
}

type exit struct {
	name string
	done chan struct{}
	cmd  *exec.Cmd
}

// Exited names the daemons that are no longer running, with how they
// ended.
func (l *Lab) Exited() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.exited {
		select {
		case <-e.done:
			out = append(out, fmt.Sprintf("%s (%s)", e.name, e.cmd.ProcessState))
		default:
		}
	}
	return out
}

func (l *Lab) stop() {
	all := l.sides
	if l.site != nil {
		all = append(append([]*side(nil), l.sides...), l.site)
	}
	for _, s := range all {
		if s == nil {
			continue
		}
		for i := len(s.procs) - 1; i >= 0; i-- {
			_ = syscall.Kill(-s.procs[i].Process.Pid, syscall.SIGKILL)
		}
	}
	if l.t.Failed() {
		if dead := l.Exited(); len(dead) > 0 {
			l.t.Logf("vpnlab: daemons that had exited: %s", strings.Join(dead, ", "))
		}
		l.dumpLogs()
	}
	for _, e := range l.exited {
		<-e.done
	}
	for _, s := range all {
		if s == nil {
			continue
		}
		_ = exec.Command("ip", "netns", "del", s.gw).Run()
		if s.host != "" {
			_ = exec.Command("ip", "netns", "del", s.host).Run()
		}
		if s.pod != "" {
			_ = exec.Command("ip", "netns", "del", s.pod).Run()
		}
	}
}

// dumpLogs prints the tail of every daemon's log, for a failed test.
func (l *Lab) dumpLogs() {
	logs, _ := filepath.Glob(filepath.Join(l.dir, "*", "*.log"))
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		l.t.Logf("%s:\n%s", strings.TrimPrefix(f, l.dir+"/"), b)
	}
}

func (l *Lab) write(f string, b []byte) {
	l.t.Helper()
	if err := os.WriteFile(f, b, 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// run runs a command, in namespace ns unless ns is "", and fails the test
// if it fails.
func (l *Lab) run(ns string, name string, args ...string) []byte {
	l.t.Helper()
	out, err := l.output(ns, name, args...)
	if err != nil {
		l.t.Fatalf("vpnlab: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func (l *Lab) try(ns string, name string, args ...string) error {
	_, err := l.output(ns, name, args...)
	return err
}

func (l *Lab) output(ns string, name string, args ...string) ([]byte, error) {
	switch {
	case ns != "" && name == "ip":
		// ip -n is ip netns exec NETNS ip in one process (ip(8)).
		args = append([]string{"-n", ns}, args...)
	case ns != "":
		args = append([]string{"netns", "exec", ns, name}, args...)
		name = "ip"
	}
	return exec.Command(name, args...).CombinedOutput()
}

// query runs a query of a daemon over its control socket (swanctl's
// --uri, vtysh's --vty_socket): a file, which the test's own namespace
// reaches as the gateway's does, so the query runs without ip netns exec
// (a mount namespace and a process more at every look of the lab's
// polling loops).
func (l *Lab) query(name string, args ...string) ([]byte, error) {
	return l.output("", name, args...)
}

func (l *Lab) waitLog(f string, re *regexp.Regexp, d time.Duration) string {
	l.t.Helper()
	deadline := time.Now().Add(d)
	for {
		b, _ := os.ReadFile(f)
		if m := re.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("vpnlab: %s: no %q within %s:\n%s", f, re, d, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *Lab) waitFile(f string, d time.Duration) {
	l.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(f); err == nil {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("vpnlab: %s not there within %s", f, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// State is what a side's daemons report.
type State struct {
	// Installed names the connections whose CHILD_SA is installed.
	Installed []string
	// Established names the BGP neighbours in state Established.
	Established []string
}

// State reads side i's tunnels and BGP sessions (0 is the first side
// given to startLab).
func (l *Lab) State(i int) State {
	s := l.sides[i]
	var st State
	for j, c := range s.charons {
		out, err := l.query("swanctl", "--list-sas", "--uri", c.vici)
		if err == nil && bytes.Contains(out, []byte(", INSTALLED, ")) {
			st.Installed = append(st.Installed, s.Tunnels[j].Conn)
		}
	}
	out, err := l.query("vtysh", "--vty_socket", s.frrDir, "-c", "show bgp summary json")
	if err != nil {
		l.t.Logf("vpnlab: show bgp summary json: %v\n%s", err, out)
	} else {
		var sum struct {
			IPv4 struct {
				Peers map[string]struct {
					State string `json:"state"`
				} `json:"peers"`
			} `json:"ipv4Unicast"`
		}
		if err := json.Unmarshal(out, &sum); err != nil {
			l.t.Logf("vpnlab: show bgp summary json: %v\n%s", err, out)
		} else {
			for p, v := range sum.IPv4.Peers {
				if v.State == "Established" {
					st.Established = append(st.Established, p)
				}
			}
		}
	}
	return st
}

// waitInstalled waits until every tunnel of both sides has its CHILD_SA.
func (l *Lab) waitInstalled(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var missing []string
		for _, s := range l.sides {
			for j, c := range s.charons {
				out, err := l.query("swanctl", "--list-sas", "--uri", c.vici)
				if err != nil || !bytes.Contains(out, []byte(", INSTALLED, ")) {
					missing = append(missing, s.Name+"/"+s.Tunnels[j].Conn)
				}
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no CHILD_SA after %s for %s", timeout, strings.Join(missing, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitUp waits until every tunnel of every side is installed and its BGP
// session (with the other end's inside address) established, or returns
// what is not after timeout. The site's router's sessions are
// WaitSiteRoutes'.
func (l *Lab) WaitUp(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var missing []string
		for i, s := range l.sides {
			st := l.State(i)
			if len(st.Installed) < len(s.Tunnels) {
				missing = append(missing, fmt.Sprintf("%s: tunnels installed %v of %d", s.Name, st.Installed, len(s.Tunnels)))
			}
			for _, tn := range s.Tunnels {
				if peer := insidePeer(tn.Inside); !slices.Contains(st.Established, peer.String()) {
					missing = append(missing, fmt.Sprintf("%s: BGP with %s (%s) not established, established: %v", s.Name, peer, tn.Conn, st.Established))
				}
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not up after %s: %s", timeout, strings.Join(missing, "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// insidePeer is the other end's address on a tunnel's /30 (or /31) link:
// the link's other usable address.
func insidePeer(p netip.Prefix) netip.Addr {
	base := p.Masked().Addr()
	if p.Bits() == 31 {
		if p.Addr() == base {
			return base.Next()
		}
		return base
	}
	if p.Addr() == base.Next() {
		return base.Next().Next()
	}
	return base.Next()
}

// RouteDevs returns the interfaces of side i's gateway's route to prefix,
// none when it has no route.
func (l *Lab) RouteDevs(i int, prefix netip.Prefix) []string {
	out, err := l.output(l.sides[i].gw, "ip", "-j", "route", "show", "exact", prefix.String())
	if err != nil {
		l.t.Fatalf("vpnlab: ip route show: %v\n%s", err, out)
	}
	var routes []struct {
		Dev      string `json:"dev"`
		Nexthops []struct {
			Dev string `json:"dev"`
		} `json:"nexthops"`
	}
	if err := json.Unmarshal(out, &routes); err != nil {
		l.t.Fatalf("vpnlab: ip -j route: %v\n%s", err, out)
	}
	var devs []string
	for _, r := range routes {
		if r.Dev != "" {
			devs = append(devs, r.Dev)
		}
		for _, n := range r.Nexthops {
			devs = append(devs, n.Dev)
		}
	}
	return devs
}

// WaitRoutes waits until side i's gateway routes prefix through n
// interfaces.
func (l *Lab) WaitRoutes(i int, prefix netip.Prefix, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		devs := l.RouteDevs(i, prefix)
		if len(devs) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s routes %s through %v after %s, want %d interfaces", l.sides[i].Name, prefix, devs, timeout, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// PathOf returns the interface side i's gateway forwards a packet from
// its host to dst through.
func (l *Lab) PathOf(i int, dst netip.Addr) string {
	return l.PathFrom(i, l.sides[i].Host, dst)
}

// PathFrom is PathOf for a packet from src, an address of the host.
func (l *Lab) PathFrom(i int, src, dst netip.Addr) string {
	s := l.sides[i]
	out, err := l.output(s.gw, "ip", "-j", "route", "get", dst.String(), "from", src.String(), "iif", "lan")
	if err != nil {
		l.t.Fatalf("vpnlab: ip route get: %v\n%s", err, out)
	}
	var r []struct {
		Dev string `json:"dev"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r) == 0 {
		l.t.Fatalf("vpnlab: ip -j route get: %v\n%s", err, out)
	}
	return r[0].Dev
}

// SiteNextHops returns the next hops of the site's router's route to
// prefix, none when it has none.
func (l *Lab) SiteNextHops(prefix netip.Prefix) []netip.Addr {
	out, err := l.output(l.site.gw, "ip", "-j", "route", "show", "exact", prefix.String())
	if err != nil {
		l.t.Fatalf("vpnlab: ip route show: %v\n%s", err, out)
	}
	var routes []struct {
		Gateway  string `json:"gateway"`
		Nexthops []struct {
			Gateway string `json:"gateway"`
		} `json:"nexthops"`
	}
	if err := json.Unmarshal(out, &routes); err != nil {
		l.t.Fatalf("vpnlab: ip -j route: %v\n%s", err, out)
	}
	var hops []netip.Addr
	add := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil {
			hops = append(hops, a)
		}
	}
	for _, r := range routes {
		add(r.Gateway)
		for _, n := range r.Nexthops {
			add(n.Gateway)
		}
	}
	return hops
}

// WaitSiteRoutes waits until the site's router routes prefix through n
// next hops.
func (l *Lab) WaitSiteRoutes(prefix netip.Prefix, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		hops := l.SiteNextHops(prefix)
		if len(hops) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the site's router routes %s through %v after %s, want %d next hops", prefix, hops, timeout, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SitePathOf returns the next hop the site's router forwards a UDP
// datagram from the host's port sport to dst's port dport through.
func (l *Lab) SitePathOf(dst netip.Addr, sport, dport uint16) netip.Addr {
	out, err := l.output(l.site.gw, "ip", "-j", "route", "get", dst.String(), "from", l.sides[0].Host.String(), "iif", "lan",
		"ipproto", "udp", "sport", itoa(int(sport)), "dport", itoa(int(dport)))
	if err != nil {
		l.t.Fatalf("vpnlab: ip route get: %v\n%s", err, out)
	}
	var r []struct {
		Gateway string `json:"gateway"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r) == 0 {
		l.t.Fatalf("vpnlab: ip -j route get: %v\n%s", err, out)
	}
	a, err := netip.ParseAddr(r[0].Gateway)
	if err != nil {
		l.t.Fatalf("vpnlab: ip -j route get: no next hop:\n%s", out)
	}
	return a
}

// Kill takes side i's gateway off the network as a power loss does: its
// links go down first, so that nothing it would say on its way out (an
// IKE DELETE, a BGP NOTIFICATION) leaves it, then every daemon of it is
// killed (SIGKILL) and waited for. Its peers notice only the silence.
func (l *Lab) Kill(i int) {
	l.t.Helper()
	s := l.sides[i]
	devs := []string{"wan", "lan"}
	for _, tn := range s.Tunnels {
		devs = append(devs, tn.IfName)
	}
	for _, d := range devs {
		l.run(s.gw, "ip", "link", "set", "dev", d, "down")
	}
	for _, cmd := range s.procs {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	l.mu.Lock()
	var waits []exit
	for _, e := range l.exited {
		if slices.Contains(s.procs, e.cmd) {
			waits = append(waits, e)
		}
	}
	l.mu.Unlock()
	for _, e := range waits {
		<-e.done
	}
}

// Cut drops every packet of tunnel j of the first side, both ways, on
// the wire (the peers see a dead path, as a lost link or a failed ISP).
func (l *Lab) Cut(j int) { l.setCut(j, true) }

// Restore undoes Cut.
func (l *Lab) Restore(j int) { l.setCut(j, false) }

func (l *Lab) setCut(j int, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cuts[j] = on
	s := l.sides[0]
	var nft strings.Builder
	nft.WriteString("table inet vpnlab_cut\ndelete table inet vpnlab_cut\ntable inet vpnlab_cut {\n")
	nft.WriteString("\tchain in {\n\t\ttype filter hook prerouting priority raw;\n")
	for k, tn := range s.Tunnels {
		if l.cuts[k] {
			fmt.Fprintf(&nft, "\t\tip saddr %s ip daddr %s drop\n", tn.Remote, tn.Local)
		}
	}
	nft.WriteString("\t}\n\tchain out {\n\t\ttype filter hook output priority raw;\n")
	for k, tn := range s.Tunnels {
		if l.cuts[k] {
			fmt.Fprintf(&nft, "\t\tip saddr %s ip daddr %s drop\n", tn.Local, tn.Remote)
		}
	}
	nft.WriteString("\t}\n}\n")
	f := filepath.Join(l.dir, "cut.nft")
	l.write(f, []byte(nft.String()))
	l.run(s.gw, "nft", "-f", f)
}

// Probe sends a UDP datagram every interval from the host behind the
// second side to the host behind the first, which echoes it, and records
// when each echo came back.
type Probe struct {
	mu      sync.Mutex
	replies []time.Time
	sent    int
	done    chan struct{}
	wg      sync.WaitGroup
	conns   []net.PacketConn
}

// StartProbe starts a probe at the given interval; Stop ends it.
func (l *Lab) StartProbe(interval time.Duration) *Probe {
	l.t.Helper()
	return l.StartProbeFrom(l.sides[1].Host, interval)
}

// AddHostAddr gives side i's host another address on its LAN.
func (l *Lab) AddHostAddr(i int, a netip.Addr) {
	l.t.Helper()
	s := l.sides[i]
	l.run(s.host, "ip", "addr", "add", netip.PrefixFrom(a, s.Gateway.Bits()).String(), "dev", "lan")
}

// StartProbeFrom is StartProbe with the second side's host sending from
// src, one of its addresses (AddHostAddr): another flow, which the
// gateways' multipath routing may send another way.
func (l *Lab) StartProbeFrom(src netip.Addr, interval time.Duration) *Probe {
	l.t.Helper()
	first, second := l.sides[0], l.sides[1]
	echo := l.listenUDP(first.host, netip.AddrPortFrom(first.Host, 0))
	client := l.listenUDP(second.host, netip.AddrPortFrom(src, 0))
	p := &Probe{done: make(chan struct{}), conns: []net.PacketConn{echo, client}}
	dst := echo.LocalAddr()
	p.wg.Add(3)
	go func() { // echo
		defer p.wg.Done()
		buf := make([]byte, 64)
		for {
			n, from, err := echo.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = echo.WriteTo(buf[:n], from)
		}
	}()
	go func() { // replies
		defer p.wg.Done()
		buf := make([]byte, 64)
		for {
			_, _, err := client.ReadFrom(buf)
			if err != nil {
				return
			}
			p.mu.Lock()
			p.replies = append(p.replies, time.Now())
			p.mu.Unlock()
		}
	}()
	go func() { // sender
		defer p.wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			_, _ = client.WriteTo([]byte(fmt.Sprint(seq)), dst)
			p.mu.Lock()
			p.sent++
			p.mu.Unlock()
		}
	}()
	return p
}

// Ports returns the echo's port (the first side's host) and the
// sender's (the second side's).
func (p *Probe) Ports() (echo, sender uint16) {
	return netip.MustParseAddrPort(p.conns[0].LocalAddr().String()).Port(), netip.MustParseAddrPort(p.conns[1].LocalAddr().String()).Port()
}

// AwaitFlowing waits up to timeout for more than 10 echoes in the last
// second: the flow running again after an outage, however long it was.
func (p *Probe) AwaitFlowing(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if n, _ := p.Replies(time.Now().Add(-time.Second)); n > 10 {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Replies returns how many echoes came back and the longest time without
// one since from (measured up to now).
func (p *Probe) Replies(from time.Time) (n int, longestGap time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := from
	for _, r := range p.replies {
		if r.Before(from) {
			continue
		}
		n++
		if g := r.Sub(last); g > longestGap {
			longestGap = g
		}
		last = r
	}
	if g := time.Since(last); g > longestGap {
		longestGap = g
	}
	return n, longestGap
}

// Stop ends the probe.
func (p *Probe) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	for _, c := range p.conns {
		c.Close()
	}
	p.wg.Wait()
}

// listenUDP opens a UDP socket at addr inside namespace ns; the socket
// keeps its namespace after the thread leaves it.
func (l *Lab) listenUDP(ns string, addr netip.AddrPort) net.PacketConn {
	l.t.Helper()
	var conn net.PacketConn
	err := inNS(ns, func() (err error) {
		conn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
		return err
	})
	if err != nil {
		l.t.Fatalf("vpnlab: listen in %s: %v", ns, err)
	}
	return conn
}

// inNS runs f on a thread locked to it in network namespace ns; sockets
// f opens stay in ns. The thread returns to its own namespace before it
// is unlocked. It must not end: Go ends a thread whose goroutine returns
// locked, and the kernel then sends SIGKILL to every daemon that thread
// once started (Pdeathsig, see daemon): a daemon of a lab running in
// parallel died so, mid-test. Only a thread that cannot return is left
// locked, to end with its goroutine.
func inNS(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		back, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(back)
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		ferr := f()
		if err := unix.Setns(back, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("returning to the test's network namespace from %s: %v", ns, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Log returns side i's gateway's daemon logs' lines that match re, for
// the test's report.
func (l *Lab) Log(i int, re *regexp.Regexp) []string {
	var lines []string
	logs, _ := filepath.Glob(filepath.Join(l.dir, l.sides[i].Name+"-*", "*.log"))
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if re.MatchString(sc.Text()) {
				lines = append(lines, sc.Text())
			}
		}
	}
	return lines
}

// Restart stops side i's gateway's daemons, every charon and FRR's, as
// systemctl restart does (SIGTERM, SIGKILL after 10 s), and starts them
// again as startLab did: the charons, their connections loaded, and FRR
// with its configuration once every CHILD_SA is installed. It returns
// once they are, or with what is not after timeout; BGP is WaitUp's.
func (l *Lab) Restart(i int, timeout time.Duration) error {
	l.t.Helper()
	s := l.sides[i]
	l.stopCmds(s, s.procs)
	s.procs, s.charons, s.frrProcs = nil, nil, nil
	l.startCharons(s)
	l.loadCharons(s)
	if err := l.waitInstalled(timeout); err != nil {
		return err
	}
	l.tunnelDevices(s)
	l.startFRR(s)
	return nil
}

// stopCmds stops cmds, daemons of side s, as systemctl stop does
// (SIGTERM, SIGKILL after 10 s), waits for them to end and keeps their
// logs' lines (in <log>.before) for those started after them.
func (l *Lab) stopCmds(s *side, cmds []*exec.Cmd) {
	for _, cmd := range cmds {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
	l.mu.Lock()
	var waits []exit
	for _, e := range l.exited {
		for _, cmd := range cmds {
			if e.cmd == cmd {
				waits = append(waits, e)
			}
		}
	}
	l.mu.Unlock()
	for _, e := range waits {
		select {
		case <-e.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
			<-e.done
		}
	}
	logs, _ := filepath.Glob(filepath.Join(l.dir, s.Name+"-*", "*.log"))
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		g, err := os.OpenFile(f+".before", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, _ = g.Write(b)
			g.Close()
		}
	}
}

// loadCharons loads each tunnel's connection into its charon.
func (l *Lab) loadCharons(s *side) {
	for j, c := range s.charons {
		f := filepath.Join(c.dir, "swanctl", "swanctl.conf")
		l.write(f, s.Tunnels[j].Swanctl)
		l.run(s.gw, "swanctl", "--load-all", "--file", f, "--uri", c.vici)
	}
}

// RestartCharons restarts side i's strongSwan as systemctl restart
// strongswan does with charon-systemd: every charon stopped, started anew
// and its tunnel's connection loaded (the unit's swanctl --load-all).
// Each tunnel device gets its address and MTU again, as an XFRM
// interface, which outlives charon, keeps them. It returns without
// waiting for the tunnels. Side i is not a CloudVPN side.
func (l *Lab) RestartCharons(i int) {
	l.t.Helper()
	s := l.sides[i]
	if s.CloudVPN {
		l.t.Fatalf("vpnlab: RestartCharons of the CloudVPN side %s", s.Name)
	}
	var cmds []*exec.Cmd
	for _, c := range s.charons {
		cmds = append(cmds, c.cmd)
	}
	l.stopCmds(s, cmds)
	s.procs = without(s.procs, cmds)
	s.charons = nil
	l.startCharons(s)
	l.tunnelDevices(s)
	l.loadCharons(s)
}

// RestartFRR restarts side i's FRR daemons, as systemctl restart frr
// does, with frr.conf conf.
func (l *Lab) RestartFRR(i int, conf []byte) {
	l.t.Helper()
	s := l.sides[i]
	l.stopCmds(s, s.frrProcs)
	s.procs = without(s.procs, s.frrProcs)
	s.frrProcs = nil
	s.FRR = conf
	l.startFRR(s)
}

func without(all, some []*exec.Cmd) []*exec.Cmd {
	var out []*exec.Cmd
	for _, c := range all {
		found := false
		for _, d := range some {
			found = found || c == d
		}
		if !found {
			out = append(out, c)
		}
	}
	return out
}

// Vici returns side i's charons' vici URIs by connection.
func (l *Lab) Vici(i int) map[string]string {
	m := map[string]string{}
	for j, c := range l.sides[i].charons {
		m[l.sides[i].Tunnels[j].Conn] = c.vici
	}
	return m
}

// IKESAs returns side i's IKE_SAs by connection, as swanctl --list-sas
// shows them: "#<unique id>, ESTABLISHED, IKEv2, <its SPIs> <IKE
// algorithms> <the CHILD_SA's ESP algorithms>", "" for a connection
// without an installed CHILD_SA.
func (l *Lab) IKESAs(i int) map[string]string {
	m := map[string]string{}
	s := l.sides[i]
	for j, c := range s.charons {
		out, _ := l.query("swanctl", "--list-sas", "--uri", c.vici)
		id, ike, alg := ikeID.FindSubmatch(out), ikeAlgorithm.FindSubmatch(out), espAlgorithm.FindSubmatch(out)
		if id == nil || ike == nil || alg == nil {
			m[s.Tunnels[j].Conn] = ""
			continue
		}
		m[s.Tunnels[j].Conn] = string(id[1]) + " " + string(ike[1]) + " " + string(alg[1])
	}
	return m
}

var (
	ikeID        = regexp.MustCompile(`(?m)^\S+: (#\d+, ESTABLISHED, IKEv2, \S+ \S+)`)
	ikeAlgorithm = regexp.MustCompile(`(?m)^\s+([A-Z0-9_-]+/PRF_[A-Z0-9_/-]+)\s*$`)
)

var swanSecret = regexp.MustCompile(`(?m)^(\s*secret\s*=\s*)".*"$`)

// Rekey gives tunnel j of side i the pre-shared key key, as a new key
// version does: its connection is loaded again with the new secret
// (swanctl --load-all, which leaves the other connections as they are)
// and its IKE_SA terminated, and, when initiate is set, initiated again
// (what the on-prem install.sh does; Cloud VPN's side answers).
func (l *Lab) Rekey(i, j int, key string, initiate bool) {
	l.t.Helper()
	s := l.sides[i]
	tn := &s.Tunnels[j]
	if !swanSecret.Match(tn.Swanctl) {
		l.t.Fatalf("vpnlab: side %s, tunnel %s: no secret in its swanctl.conf", s.Name, tn.Conn)
	}
	tn.Swanctl = swanSecret.ReplaceAll(tn.Swanctl, []byte(fmt.Sprintf("${1}%q", key)))
	c := s.charons[j]
	f := filepath.Join(c.dir, "swanctl", "swanctl.conf")
	l.write(f, tn.Swanctl)
	l.run(s.gw, "swanctl", "--load-all", "--noprompt", "--file", f, "--uri", c.vici)
	_ = l.try(s.gw, "swanctl", "--terminate", "--ike", tn.Conn, "--force", "--timeout", "10", "--uri", c.vici)
	if initiate {
		_ = l.try(s.gw, "swanctl", "--initiate", "--child", tn.Conn, "--timeout", "30", "--uri", c.vici)
	}
}
