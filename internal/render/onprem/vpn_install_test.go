package onprem_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/scriptenv"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// vpnClusterCUE is a cluster network with an HA VPN whose two tunnels end
// on one on-prem gateway, gw-a, their keys at versions %d and %d.
const vpnClusterCUE = `gcp: network: {
	name:            "vpc-a"
	subnetwork:      "nodes-a"
	onpremRanges: ["10.20.0.0/16"]
	egress:          "cloud-nat"
	subnetworkRange: "10.128.0.0/20"
	vpn: {
		cloudRouterASN: 64514
		onpremASN:      4200000001
		peerGateways: [{name: "gw-a", address: "192.0.2.10"}]
		haVpnAddresses: ["198.51.100.20", "198.51.100.21"]
		tunnels: [
			{insideRange: "169.254.10.0/30", sharedSecret: {secret: "psk-0", version: %d}},
			{insideRange: "169.254.11.0/30", sharedSecret: {secret: "psk-1", version: %d}},
		]
	}
}`

// The Cloud Router's end of each tunnel's BGP session (the neighbor
// install.sh waits for).
var vpnNeighbor = map[string]string{"tunnel0": "169.254.10.1", "tunnel1": "169.254.11.1"}

// The stubs of the commands install.sh drives. Each one logs its call
// (one line, its name and arguments) and plays the host's part from the
// files of the state directory @STATE@: units/ (installed units),
// enabled/ and active/ (systemctl), link/ (interfaces), sa/ (tunnels with
// an installed CHILD_SA), bgp/<neighbor> (the polls left until the
// session is Established), broken/ (tunnels that never come up),
// secret/<name>@<version> (Secret Manager), auth (gcloud logged in).
// vtysh's dry run is the real vtysh's when there is one.
var vpnStubs = map[string]string{
	"gcloud": `case "$1 $2" in
"auth list") [[ -f $S/auth ]] && echo admin@example.com; exit 0 ;;
"secrets versions")
  [[ $3 == access && $6 == --project=acme-hybrid-ai ]] || exit 2
  f=$S/secret/${5#--secret=}@$4
  [[ -f $f ]] || { echo "NOT_FOUND: $5 version $4" >&2; exit 1; }
  cat "$f" ;;
*) exit 2 ;;
esac`,
	"systemctl": `case "$1" in
is-enabled|is-active) [[ -f $S/${1#is-}/$3 ]] ;;
cat) [[ -f $S/units/$2 ]] ;;
start|restart) touch "$S/active/$2"
  if [[ $1 == restart && $2 == strongswan.service ]]; then rm -f "$S"/sa/*; fi ;;
enable) touch "$S/enabled/$3" ;;
reload|daemon-reload) ;;
*) exit 2 ;;
esac`,
	"networkctl": `[[ $1 == reload ]] || exit 2
for f in /etc/systemd/network/*.netdev; do
  [[ -f $f ]] && touch "$S/link/$(basename "$f" .netdev)"
done
exit 0`,
	"ip": `case "$1 $2" in
"link show") [[ -f $S/link/$4 ]] ;;
"link delete") rm "$S/link/$4" ;;
*) exit 2 ;;
esac`,
	"swanctl": `case "$1" in
--list-sas)
  if [[ -f $S/sa/$3 ]]; then
    echo "$3: #1, ESTABLISHED, IKEv2, 0123456789abcdef_i* fedcba9876543210_r"
    echo "  $3: #1, reqid 1, INSTALLED, TUNNEL, ESP:AES_GCM_16-256/MODP_2048"
  fi ;;
--load-all) echo "swanctl conf.d: $(cd /etc/swanctl/conf.d && echo *)" >>"$LOG" ;;
--terminate) rm -f "$S/sa/$3" "$S/bgp/$(cat "$S/addr/$3")" ;;
--initiate)
  [[ -f $S/broken/$3 ]] && exit 1
  touch "$S/sa/$3"
  echo 2 >"$S/bgp/$(cat "$S/addr/$3")" ;;
*) exit 2 ;;
esac`,
	"vtysh": `case "$1" in
-C|--dryrun) if [[ -x /usr/bin/vtysh ]]; then exec /usr/bin/vtysh "$@"; fi ;;
-c)
  read -r _ _ _ addr _ <<<"$2"
  state=Active
  if [[ -f $S/bgp/$addr ]]; then
    n=$(cat "$S/bgp/$addr")
    if ((n > 0)); then echo $((n - 1)) >"$S/bgp/$addr"; else state=Established; fi
  fi
  echo "vtysh => $addr $state" >>"$LOG"
  printf '{\n  "%s":{\n    "remoteAs":64514,\n    "bgpState":"%s"\n  }\n}\n' "$addr" "$state" ;;
*) exit 2 ;;
esac`,
	// nft's check mode changes nothing: the real one's when there is one.
	"nft": `case "$1" in
--check) if [[ -x /usr/sbin/nft ]]; then exec /usr/sbin/nft "$@"; fi ;;
*) exit 2 ;;
esac`,
	"sleep": `exit 0`,
}

// A vpnHost is an on-prem gateway host for install.sh: a /etc of its own,
// FRR's library directory, the stubs and their state.
type vpnHost struct {
	t                          *testing.T
	gw                         string // the rendered gateway directory
	etc, frrLib, bin, state    string
	log                        string
	withoutGcloud, noFRRReload bool
}

// newVPNHost is a Debian 12 host with strongSwan, FRR (bgpd off) and
// systemd-networkd enabled, gcloud logged in, the secrets psk-0 and psk-1
// at version 1, nothing of the VPN installed; files are gw-a's.
func newVPNHost(t *testing.T, files layout.Files) *vpnHost {
	t.Helper()
	scriptenv.Require(t)
	if _, err := os.Stat("/usr/lib/frr"); err != nil {
		t.Skip("no /usr/lib/frr to stand FRR's library directory in for (apt-get install frr)")
	}
	h := &vpnHost{t: t, gw: filepath.Join(t.TempDir(), "gw-a"), etc: t.TempDir(), frrLib: t.TempDir(), bin: t.TempDir(), state: t.TempDir()}
	h.log = filepath.Join(h.state, "log")
	h.files(files)
	h.write(filepath.Join(h.etc, "passwd"), "root:x:0:0:root:/root:/bin/bash\nfrr:x:100:101:FRR:/nonexistent:/usr/sbin/nologin\n")
	h.write(filepath.Join(h.etc, "group"), "root:x:0:\nfrr:x:101:\n")
	h.write(filepath.Join(h.etc, "frr/daemons"), "zebra=yes\nbgpd=no\nospfd=no\n")
	for _, d := range []string{"swanctl/conf.d", "strongswan.d", "systemd/network"} {
		if err := os.MkdirAll(filepath.Join(h.etc, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.write(filepath.Join(h.frrLib, "frr-reload.py"), "#!/bin/sh\nexit 0\n")
	for name, body := range vpnStubs {
		h.write(filepath.Join(h.bin, name), "#!/bin/bash\nS="+h.state+"\nLOG="+h.log+"\necho \""+name+" $*\" >>\"$LOG\"\n"+body+"\n")
	}
	for _, f := range []string{"units/strongswan.service", "units/frr.service", "enabled/systemd-networkd.service", "active/systemd-networkd.service", "active/strongswan.service", "auth", "secret/psk-0@1", "secret/psk-1@1"} {
		h.write(filepath.Join(h.state, f), strings.TrimPrefix(f, "secret/")+"\n")
	}
	for tn, addr := range vpnNeighbor {
		h.write(filepath.Join(h.state, "addr", tn), addr)
	}
	for _, d := range []string{"sa", "bgp", "link", "broken"} {
		if err := os.MkdirAll(filepath.Join(h.state, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// files puts the rendered files of gw-a where install.sh is run from.
func (h *vpnHost) files(files layout.Files) {
	h.t.Helper()
	prefix := layout.OnpremVPNGatewayDir("gw-a") + "/"
	for _, p := range files.Paths() {
		if rel, ok := strings.CutPrefix(p, prefix); ok {
			h.write(filepath.Join(h.gw, rel), string(files[p]))
		}
	}
}

func (h *vpnHost) write(p, s string) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
		h.t.Fatal(err)
	}
}

// run runs install.sh with bash as root in a mount namespace where the
// host's /etc and /usr/lib/frr are the test's, and returns its output and
// the stubs' calls.
func (h *vpnHost) run() (string, []string, error) {
	h.t.Helper()
	if err := os.WriteFile(h.log, nil, 0o644); err != nil {
		h.t.Fatal(err)
	}
	bin := h.bin
	if h.withoutGcloud {
		bin = h.t.TempDir()
		ents, _ := os.ReadDir(h.bin)
		for _, e := range ents {
			if e.Name() != "gcloud" {
				if err := os.Symlink(filepath.Join(h.bin, e.Name()), filepath.Join(bin, e.Name())); err != nil {
					h.t.Fatal(err)
				}
			}
		}
	}
	frrLib := h.frrLib
	if h.noFRRReload {
		frrLib = h.t.TempDir()
	}
	env := scriptenv.New(h.t)
	env.Bind(h.etc, "/etc")
	env.Bind(frrLib, "/usr/lib/frr")
	cmd := env.Command("bash", filepath.Join(h.gw, layout.OnpremVPNInstallFile))
	cmd.Env = []string{"PATH=" + bin + ":/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}
	out, err := cmd.CombinedOutput()
	raw, rerr := os.ReadFile(h.log)
	if rerr != nil {
		h.t.Fatal(rerr)
	}
	return string(out), strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n"), err
}

// snapshot is every file under dir with its mode and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		m[strings.TrimPrefix(p, dir)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// readOnly matches the calls that change nothing on the host.
var readOnly = regexp.MustCompile(`^(systemctl (is-enabled|is-active|cat) |nft --check |gcloud (auth list|secrets versions access) |vtysh (-C|--dryrun|-c show )|vtysh => |swanctl --list-sas |ip link show |sleep |swanctl conf\.d: )`)

func mutating(calls []string) []string {
	var m []string
	for _, c := range calls {
		if c != "" && !readOnly.MatchString(c) {
			m = append(m, c)
		}
	}
	return m
}

// vpnFiles renders vpnClusterCUE with tunnel0's key at version v0 and
// tunnel1's at v1.
func vpnFiles(t *testing.T, v0, v1 int) layout.Files {
	t.Helper()
	_, files := testsrc.Spec{Cluster: fmt.Sprintf(vpnClusterCUE, v0, v1)}.MustRender(t)
	if _, ok := files[layout.OnpremVPNGatewayDir("gw-a")+"/"+layout.OnpremVPNInstallFile]; !ok {
		t.Fatal("no install.sh for gw-a")
	}
	return files
}

// TestVPNInstallStopsBeforeChanging runs the rendered install.sh on hosts
// that lack one of its prerequisites: each run stops with a message that
// names the fix, before any call that changes the host, and leaves /etc
// as it was.
func TestVPNInstallStopsBeforeChanging(t *testing.T) {
	files := vpnFiles(t, 1, 1)
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, h *vpnHost)
		want  string
	}{
		{"networkd not enabled", func(t *testing.T, h *vpnHost) {
			os.Remove(filepath.Join(h.state, "enabled/systemd-networkd.service"))
			os.Remove(filepath.Join(h.state, "active/systemd-networkd.service"))
		}, "systemd-networkd is not enabled: it creates the tunnels' XFRM interfaces (vpn-tunnel0 vpn-tunnel1), now and at every boot. Enable it (it manages only the interfaces its .network files match): systemctl enable --now systemd-networkd"},
		{"networkd enabled, not running", func(t *testing.T, h *vpnHost) {
			os.Remove(filepath.Join(h.state, "active/systemd-networkd.service"))
		}, "systemd-networkd is enabled but not running: systemctl start systemd-networkd"},
		{"no gcloud", func(t *testing.T, h *vpnHost) {
			if p, err := exec.LookPath("gcloud"); err == nil {
				t.Skipf("this machine has a gcloud of its own (%s)", p)
			}
			h.withoutGcloud = true
		}, "gcloud is missing: it is not a Debian package: install the Google Cloud CLI"},
		{"gcloud not logged in", func(t *testing.T, h *vpnHost) {
			os.Remove(filepath.Join(h.state, "auth"))
		}, "gcloud has no active account: log in (gcloud auth login, or gcloud auth activate-service-account --key-file=KEY)"},
		{"no frr-pythontools", func(t *testing.T, h *vpnHost) { h.noFRRReload = true }, "FRR's reload script /usr/lib/frr/frr-reload.py is missing (install.sh reloads FRR instead of restarting it): apt-get install frr-pythontools"},
		{"no charon-systemd", func(t *testing.T, h *vpnHost) {
			os.Remove(filepath.Join(h.state, "units/strongswan.service"))
		}, "strongSwan's service strongswan.service is missing: apt-get install charon-systemd"},
		{"the second secret unreadable", func(t *testing.T, h *vpnHost) {
			os.Remove(filepath.Join(h.state, "secret/psk-1@1"))
		}, "reading secret psk-1 (version 1) failed; nothing was changed"},
		{"the MSS clamp refused", func(t *testing.T, h *vpnHost) {
			if _, err := os.Stat("/usr/sbin/nft"); err != nil {
				t.Skip("no nft (apt-get install nftables)")
			}
			f := filepath.Join(h.gw, layout.MSSClampFile)
			b, _ := os.ReadFile(f)
			h.write(f, strings.Replace(string(b), "maxseg size set", "maxseg size sets", 1))
		}, "nft refuses the MSS clamp (nftables/nodegen-vpn-mss-clamp.nft)"},
		{"frr.conf refused", func(t *testing.T, h *vpnHost) {
			if _, err := os.Stat("/usr/bin/vtysh"); err != nil {
				t.Skip("no vtysh (apt-get install frr)")
			}
			f := filepath.Join(h.gw, layout.FRRConfFile)
			b, _ := os.ReadFile(f)
			h.write(f, strings.Replace(string(b), " remote-as 64514", " remote-as sixty-four", 1))
		}, "vtysh refuses frr.conf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newVPNHost(t, files)
			c.setup(t, h)
			before := snapshot(t, h.etc)
			out, calls, err := h.run()
			if err == nil || !strings.Contains(out, "install.sh: "+c.want) {
				t.Errorf("install.sh: %v, want it to stop with %q:\n%s", err, c.want, out)
			}
			if !strings.Contains(out, "othing was changed") {
				t.Errorf("install.sh does not say nothing was changed:\n%s", out)
			}
			if m := mutating(calls); len(m) > 0 {
				t.Errorf("calls that change the host: %q", m)
			}
			after := snapshot(t, h.etc)
			for p, v := range after {
				if before[p] != v {
					t.Errorf("/etc%s changed", p)
				}
			}
			for p := range before {
				if _, ok := after[p]; !ok {
					t.Errorf("/etc%s removed", p)
				}
			}
		})
	}
}

// callIndex is the index of the first call at or after from that
// contains s, or -1.
func callIndex(calls []string, from int, s string) int {
	for i := from; i < len(calls); i++ {
		if strings.Contains(calls[i], s) {
			return i
		}
	}
	return -1
}

// TestVPNInstallOneTunnelAtATime runs the rendered install.sh of a
// gateway holding both tunnels: on a fresh host it brings tunnel0 up and
// waits for its BGP session before it installs anything of tunnel1; run
// again unchanged it touches nothing; with tunnel1's key rotated it
// re-initiates tunnel1 alone, once it saw tunnel0 established; with
// tunnel1 down it refuses to re-initiate tunnel0; a tunnel that does not
// come back stops it after a bounded wait, before the next tunnel.
func TestVPNInstallOneTunnelAtATime(t *testing.T) {
	files := vpnFiles(t, 1, 1)
	h := newVPNHost(t, files)
	out, calls, err := h.run()
	if err != nil {
		t.Fatalf("install.sh on a fresh host: %v\n%s", err, out)
	}
	// tunnel0: its connection alone loaded, initiated, polled until
	// Established; only then tunnel1's connection is loaded.
	load0 := callIndex(calls, 0, "swanctl conf.d: tunnel0.conf")
	init0 := callIndex(calls, 0, "swanctl --initiate --child tunnel0")
	up0 := callIndex(calls, 0, "vtysh => 169.254.10.1 Established")
	load1 := callIndex(calls, 0, "swanctl conf.d: tunnel0.conf tunnel1.conf")
	init1 := callIndex(calls, 0, "swanctl --initiate --child tunnel1")
	up1 := callIndex(calls, 0, "vtysh => 169.254.11.1 Established")
	if load0 < 0 || init0 < load0 || up0 < init0 || callIndex(calls, init0, "vtysh => 169.254.10.1 Active") > up0 || load1 < up0 || init1 < load1 || up1 < init1 {
		t.Errorf("on a fresh host the calls are not tunnel0 loaded, initiated, polled to Established, then tunnel1:\n%s", strings.Join(calls, "\n"))
	}
	if i := callIndex(calls, 0, "tunnel1"); i >= 0 && i < up0 && !readOnly.MatchString(calls[i]) {
		t.Errorf("tunnel1 touched (%q) before tunnel0's BGP session was Established", calls[i])
	}
	for _, want := range []string{"systemctl restart strongswan.service", "systemctl restart frr.service", "systemctl enable --quiet nodegen-vpn-mss-clamp.service"} {
		if callIndex(calls, 0, want) < 0 {
			t.Errorf("no %q on a fresh host:\n%s", want, strings.Join(calls, "\n"))
		}
	}
	// The MSS clamp is loaded before the first tunnel carries anything.
	if clamp := callIndex(calls, 0, "systemctl restart nodegen-vpn-mss-clamp.service"); clamp < 0 || clamp > init0 || callIndex(calls, 0, "systemctl daemon-reload") > clamp {
		t.Errorf("on a fresh host the MSS clamp is not loaded (after a daemon-reload) before tunnel0 is initiated:\n%s", strings.Join(calls, "\n"))
	}
	etc := snapshot(t, h.etc)
	if got := etc["/nodegen/vpn-mss-clamp.nft"]; got != "-rw-r--r-- "+string(files[layout.OnpremVPNGatewayDir("gw-a")+"/"+layout.MSSClampFile]) {
		t.Errorf("/etc/nodegen/vpn-mss-clamp.nft is not the rendered clamp: %q", got)
	}
	for _, p := range []string{"/swanctl/conf.d/tunnel0.conf", "/swanctl/conf.d/tunnel1.conf", "/swanctl/secrets.d/tunnel0.conf", "/swanctl/secrets.d/tunnel1.conf", "/systemd/network/vpn-tunnel0.netdev", "/systemd/network/vpn-tunnel1.network", "/strongswan.d/nodegen.conf", "/frr/frr.conf", "/systemd/system/nodegen-vpn-mss-clamp.service"} {
		if _, ok := etc[p]; !ok {
			t.Errorf("/etc%s not installed", p)
		}
	}
	if !strings.HasPrefix(etc["/swanctl/secrets.d/tunnel1.conf"], "-rw-------") || !strings.Contains(etc["/swanctl/secrets.d/tunnel1.conf"], fmt.Sprintf("secret = 0x%x", "psk-1@1\n")) {
		t.Errorf("tunnel1's key file: %q", etc["/swanctl/secrets.d/tunnel1.conf"])
	}
	if etc["/frr/daemons"] != "-rw-r--r-- zebra=yes\nbgpd=yes\nospfd=no\n" {
		t.Errorf("/etc/frr/daemons: %q", etc["/frr/daemons"])
	}

	// Again, nothing changed: nothing restarted, reloaded or re-initiated.
	out, calls, err = h.run()
	if err != nil {
		t.Fatalf("install.sh again: %v\n%s", err, out)
	}
	if m := mutating(calls); len(m) > 0 {
		t.Errorf("install.sh with nothing changed: %q\n%s", m, out)
	}

	// tunnel1's key rotated (version 2 in the source): tunnel1 alone, after
	// tunnel0 was seen up.
	h.write(filepath.Join(h.state, "secret/psk-1@2"), "rotated")
	h.files(vpnFiles(t, 1, 2))
	out, calls, err = h.run()
	if err != nil {
		t.Fatalf("install.sh, tunnel1's key rotated: %v\n%s", err, out)
	}
	if m := mutating(calls); !slices.Contains(m, "swanctl --initiate --child tunnel1 --timeout 30") || !slices.Contains(m, "swanctl --terminate --ike tunnel1 --force --timeout 10") || slices.ContainsFunc(m, func(c string) bool {
		return strings.Contains(c, "tunnel0") || strings.Contains(c, "frr") || strings.Contains(c, "strongswan")
	}) {
		t.Errorf("tunnel1's key rotated, the calls that change the host: %q", m)
	}
	if term1, seen0 := callIndex(calls, 0, "swanctl --terminate --ike tunnel1"), callIndex(calls, 0, "vtysh => 169.254.10.1 Established"); seen0 < 0 || seen0 > term1 {
		t.Errorf("tunnel1 terminated before tunnel0 was seen established:\n%s", strings.Join(calls, "\n"))
	}
	if got := snapshot(t, h.etc)["/swanctl/secrets.d/tunnel1.conf"]; !strings.Contains(got, fmt.Sprintf("secret = 0x%x", "rotated")) {
		t.Errorf("tunnel1's new key not installed: %q", got)
	}

	// tunnel0's key rotated while tunnel1 is down: refused, tunnel0 kept.
	os.Remove(filepath.Join(h.state, "sa/tunnel1"))
	h.write(filepath.Join(h.state, "secret/psk-0@2"), "rotated-0")
	h.files(vpnFiles(t, 2, 2))
	before := snapshot(t, h.etc)["/swanctl/secrets.d/tunnel0.conf"]
	out, calls, err = h.run()
	if want := "install.sh: tunnel0 is up and tunnel1 is not: re-initiating tunnel0 now would leave this host without a tunnel"; err == nil || !strings.Contains(out, want) {
		t.Errorf("install.sh with tunnel1 down and tunnel0 changed: %v, want %q:\n%s", err, want, out)
	}
	if m := mutating(calls); slices.ContainsFunc(m, func(c string) bool { return strings.Contains(c, "tunnel0") }) {
		t.Errorf("tunnel0 touched while tunnel1 was down: %q", m)
	}
	if snapshot(t, h.etc)["/swanctl/secrets.d/tunnel0.conf"] != before {
		t.Error("tunnel0's key file changed while tunnel1 was down")
	}
}

// TestVPNInstallBoundedWait: on a fresh host where tunnel0 never comes
// back, install.sh stops after its bounded wait with a message naming the
// tunnel, and never touches tunnel1.
func TestVPNInstallBoundedWait(t *testing.T) {
	h := newVPNHost(t, vpnFiles(t, 1, 1))
	h.write(filepath.Join(h.state, "broken/tunnel0"), "")
	out, calls, err := h.run()
	if want := "install.sh: tunnel0 is not back 120 s after its re-initiation (CHILD_SA installed, BGP session with 169.254.10.1 Established); the tunnels after it were not touched"; err == nil || !strings.Contains(out, want) {
		t.Errorf("install.sh with tunnel0 broken: %v, want %q:\n%s", err, want, out)
	}
	sleeps := 0
	for _, c := range calls {
		if c == "sleep 2" {
			sleeps++
		}
	}
	if sleeps != 60 {
		t.Errorf("%d polls of 2 s, want 60", sleeps)
	}
	if m := mutating(calls); slices.ContainsFunc(m, func(c string) bool { return strings.Contains(c, "tunnel1") }) {
		t.Errorf("tunnel1 touched: %q", m)
	}
	if _, ok := snapshot(t, h.etc)["/swanctl/conf.d/tunnel1.conf"]; ok {
		t.Error("tunnel1's connection installed")
	}
}
