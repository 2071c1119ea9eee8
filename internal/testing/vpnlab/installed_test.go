//go:build linux

package vpnlab

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/layout"
)

// The stand-ins install.sh finds first on its PATH in the lab, for what
// cannot run here: gcloud (Secret Manager, from the files secret/<name>@<version>
// of the state folder @STATE@), systemctl (the units' states as files of
// the state folder; a start or restart of strongSwan or FRR is asked of
// the test, which restarts the lab's daemons, through the spool folder
// @SPOOL@; the MSS clamp's unit runs its installed ExecStop= and
// ExecStart= lines; a reload of FRR runs FRR's frr-reload.py as
// frrinit.sh does), networkctl (its reload gives each tunnel device the
// address of its installed .network: the lab's tunnel devices are
// charon's TUN devices, which stand in for the XFRM interfaces networkd
// makes) and swanctl (the real one, pointed at the charon of the
// connection it names: the lab runs a charon per tunnel, and its
// --load-all gives each charon its own tunnel's installed connection and
// key). Everything else install.sh runs is the machine's: bash, ip, nft,
// vtysh against the lab's FRR, swanctl against the lab's charons.
var installStandIns = map[string]string{
	"gcloud": `case "$1 $2" in
"auth list") echo lab@example.com ;;
"secrets versions")
  f=$S/secret/${5#--secret=}@$4
  [[ $3 == access && -f $f ]] || { echo "gcloud stand-in: NOT_FOUND: $*" >&2; exit 1; }
  cat "$f" ;;
*) echo "gcloud stand-in: not played: $*" >&2; exit 2 ;;
esac`,
	"systemctl": `ask() {
  local r
  r=$SPOOL/$(date +%s%N).$$
  printf '%s\n' "$@" >"$r.tmp"
  mv "$r.tmp" "$r.req"
  until [[ -f $r.done ]]; do sleep 0.05; done
  cat "$r.out"
  return "$(cat "$r.done")"
}
unit_lines() { sed -n "s/^$1=//p" "/etc/systemd/system/$2"; }
case "$1" in
cat) [[ -f $S/units/$2 ]] ;;
is-enabled|is-active) [[ -f $S/${1#is-}/$3 ]] ;;
enable) touch "$S/enabled/$3" ;;
daemon-reload) ;;
start|restart|reload)
  case "$1 $2" in
  "reload frr.service") exec /usr/lib/frr/frr-reload.py --reload /etc/frr/frr.conf ;;
  "start strongswan.service"|"restart strongswan.service"|"start frr.service"|"restart frr.service") ask "$1" "$2" || exit ;;
  "start nodegen-vpn-mss-clamp.service"|"restart nodegen-vpn-mss-clamp.service")
    if [[ $1 == restart && -f $S/active/$2 ]]; then
      while read -r line; do $line || exit; done < <(unit_lines ExecStop "$2")
    fi
    while read -r line; do $line || exit; done < <(unit_lines ExecStart "$2") ;;
  *) echo "systemctl stand-in: not played: $*" >&2; exit 2 ;;
  esac
  touch "$S/active/$2" ;;
*) echo "systemctl stand-in: not played: $*" >&2; exit 2 ;;
esac`,
	"networkctl": `[[ $1 == reload ]] || { echo "networkctl stand-in: not played: $*" >&2; exit 2; }
for f in /etc/systemd/network/*.network; do
  name=$(sed -n 's/^Name=//p' "$f")
  addr=$(sed -n 's/^Address=//p' "$f")
  ip link show dev "$name" >/dev/null 2>&1 || { echo "networkctl stand-in: no $name: the lab's tunnel devices are its charons'" >&2; exit 1; }
  ip addr replace "$addr" dev "$name"
done`,
	"swanctl": `args=("$@")
conn=
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in --ike|--child) conn=${args[i+1]} ;; esac
done
if [[ " $* " == *" --load-all "* ]]; then
  for f in "$S"/vici/*; do
    c=$(basename "$f")
    printf 'include /etc/swanctl/conf.d/%s.conf\ninclude /etc/swanctl/secrets.d/%s.conf\n' "$c" "$c" >"$S/load-$c.conf"
    # (Only swanctl's own lines of what it loaded: the machine's
    # strongswan.conf names plugins swanctl has not.)
    out=$(/usr/sbin/swanctl "$@" --file "$S/load-$c.conf" --uri "$(cat "$f")" 2>&1) || { echo "$out" >&2; exit 1; }
    grep -E "^(loaded|successfully loaded)" <<<"$out"
  done
  exit 0
fi
[[ -f $S/vici/$conn ]] || { echo "swanctl stand-in: no charon for: $*" >&2; exit 2; }
exec /usr/sbin/swanctl "$@" --uri "$(cat "$S/vici/$conn")"`,
}

// gatewayHost is the lab's on-prem gateway as a host install.sh runs on:
// the gateway's network namespace, and a mount namespace per run whose
// /etc is this machine's under an overlay whose upper layer is root/etc
// (what install.sh installed, nothing else of the machine's /etc
// changed), whose /run/frr holds the lab's FRR's sockets, and whose PATH
// starts with installStandIns.
type gatewayHost struct {
	t                       *testing.T
	lab                     *Lab
	root, work              string
	bin, state, spool       string
	installedFRR, clampUnit string
}

// installedLab installs r's gateway with its
// install.sh into an empty root (ROOT=, which starts nothing), starts the
// lab with the on-prem gateway loaded from what install.sh installed (its
// connections and keys, frr.conf, the MSS clamp) and the Cloud VPN
// stand-in from r's Terraform with the same keys, and waits until both
// tunnels are up, BGP established and both sides route over both.
func installedLab(t *testing.T, r rendered, keys psks) (*gatewayHost, *Lab) {
	t.Helper()
	requireLab(t)
	// install.sh refuses a host without it (systemctl reload frr runs it).
	if _, err := os.Stat("/usr/lib/frr/frr-reload.py"); err != nil {
		msg := "the rendered install.sh needs FRR's /usr/lib/frr/frr-reload.py (apt-get install frr-pythontools)"
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	h := &gatewayHost{t: t, root: filepath.Join(dir, "root"), work: filepath.Join(dir, "work"),
		bin: filepath.Join(dir, "bin"), state: filepath.Join(dir, "state"), spool: filepath.Join(dir, "spool")}
	for _, d := range []string{h.work, h.bin, h.spool, filepath.Join(h.root, "etc", "frr")} {
		mkdir(t, d)
	}
	for _, d := range []string{"secret", "units", "enabled", "active", "vici"} {
		mkdir(t, filepath.Join(h.state, d))
	}
	for name, body := range installStandIns {
		write(t, filepath.Join(h.bin, name), "#!/bin/bash\nS="+h.state+"\nSPOOL="+h.spool+"\n"+body+"\n", 0o755)
	}
	for _, tn := range r.vpn.Tunnels {
		s := tn.SharedSecret
		write(t, filepath.Join(h.state, "secret", fmt.Sprintf("%s@%d", s.Secret, s.Version)), keys.key(s.Secret), 0o600)
	}
	for _, f := range []string{"units/strongswan.service", "units/frr.service", "enabled/systemd-networkd.service", "active/systemd-networkd.service"} {
		write(t, filepath.Join(h.state, f), "", 0o644)
	}
	// Debian's frr package: bgpd off in /etc/frr/daemons.
	daemons, err := os.ReadFile("/etc/frr/daemons")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(h.root, "etc", "frr", "daemons"), string(daemons), 0o644)

	cmd := exec.Command("bash", filepath.Join(r.gwDir, layout.OnpremVPNInstallFile))
	cmd.Env = []string{"PATH=" + h.bin + ":/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", "ROOT=" + h.root}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ROOT=%s install.sh: %v\n%s", h.root, err, out)
	}
	etc := filepath.Join(h.root, "etc")
	if b, _ := os.ReadFile(filepath.Join(etc, "frr", "daemons")); !bytes.Contains(b, []byte("\nbgpd=yes\n")) {
		t.Fatalf("install.sh left bgpd off in /etc/frr/daemons:\n%s", b)
	}

	onprem, cloud, _, _ := r.sidesWith(t, keys)
	for i := range onprem.Tunnels {
		tn := &onprem.Tunnels[i]
		tn.Swanctl = []byte(fmt.Sprintf("include %s\ninclude %s\n",
			filepath.Join(etc, "swanctl", "conf.d", tn.Conn+".conf"), filepath.Join(etc, "swanctl", "secrets.d", tn.Conn+".conf")))
	}
	h.installedFRR = filepath.Join(etc, "frr", "frr.conf")
	if onprem.FRR, err = os.ReadFile(h.installedFRR); err != nil {
		t.Fatal(err)
	}
	if onprem.MSSClamp, err = os.ReadFile(filepath.Join(etc, "nodegen", "vpn-mss-clamp.nft")); err != nil {
		t.Fatal(err)
	}
	h.clampUnit = "nodegen-vpn-mss-clamp.service"
	if _, err := os.Stat(filepath.Join(etc, "systemd", "system", h.clampUnit)); err != nil {
		t.Fatal(err)
	}
	h.lab = startLab(t, onprem, cloud)
	if err := h.lab.WaitUp(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	h.waitRoutes(r)
	// What a running gateway's units are: strongSwan, FRR and the MSS
	// clamp (loaded by the lab as written) started and enabled.
	for _, u := range []string{"strongswan.service", "frr.service", h.clampUnit} {
		write(t, filepath.Join(h.state, "active", u), "", 0o644)
		write(t, filepath.Join(h.state, "enabled", u), "", 0o644)
	}
	h.noteVici()
	return h, h.lab
}

// waitRoutes waits until both sides route the other's prefixes over both
// tunnels.
func (h *gatewayHost) waitRoutes(r rendered) {
	h.t.Helper()
	cloudRange, onpremRange := netip.MustParsePrefix(r.network.SubnetworkRange), netip.MustParsePrefix(r.network.OnpremRanges[0])
	if err := h.lab.WaitRoutes(0, cloudRange, 2, 30*time.Second); err != nil {
		h.t.Fatal(err)
	}
	if err := h.lab.WaitRoutes(1, onpremRange, 2, 30*time.Second); err != nil {
		h.t.Fatal(err)
	}
}

// noteVici tells the swanctl stand-in where each connection's charon is.
func (h *gatewayHost) noteVici() {
	for conn, uri := range h.lab.Vici(0) {
		write(h.t, filepath.Join(h.state, "vici", conn), uri, 0o644)
	}
}

// install runs gwDir's install.sh as root on the gateway host and
// returns its output. While it runs, the test plays what the systemctl
// stand-in asks of it.
func (h *gatewayHost) install(gwDir string) (string, error) {
	h.t.Helper()
	return h.inHost("bash", filepath.Join(gwDir, layout.OnpremVPNInstallFile))
}

// inHost runs a command on the gateway host (see gatewayHost).
func (h *gatewayHost) inHost(name string, args ...string) (string, error) {
	h.t.Helper()
	s := h.lab.sides[0]
	setup := `set -e
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$UPPER,workdir=$WORK" /etc
mount -t tmpfs tmpfs /run
ln -s "$FRRDIR" /run/frr
exec "$@"`
	cmd := exec.Command("ip", append([]string{"netns", "exec", s.gw, "unshare", "--mount", "--propagation", "private", "bash", "-c", setup, "host", name}, args...)...)
	cmd.Env = []string{"PATH=" + h.bin + ":/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C",
		"UPPER=" + filepath.Join(h.root, "etc"), "WORK=" + h.work, "FRRDIR=" + s.frrDir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			h.serve()
			return out.String(), err
		case <-time.After(50 * time.Millisecond):
			h.serve()
		}
	}
}

// serve plays the systemctl stand-in's requests: a start or restart of
// strongSwan restarts the gateway's charons (each loading its installed
// connection and key), of FRR restarts FRR with the installed frr.conf.
func (h *gatewayHost) serve() {
	h.t.Helper()
	reqs, _ := filepath.Glob(filepath.Join(h.spool, "*.req"))
	sort.Strings(reqs)
	for _, f := range reqs {
		b, err := os.ReadFile(f)
		if err != nil {
			h.t.Fatal(err)
		}
		base := strings.TrimSuffix(f, ".req")
		os.Remove(f)
		msg, code := "", 0
		switch strings.Join(strings.Fields(string(b))[:2], " ") {
		case "start strongswan.service", "restart strongswan.service":
			h.lab.RestartCharons(0)
			h.noteVici()
			msg = "the lab's charons restarted\n"
		case "start frr.service", "restart frr.service":
			conf, err := os.ReadFile(h.installedFRR)
			if err != nil {
				h.t.Fatal(err)
			}
			h.lab.RestartFRR(0, conf)
			msg = "the lab's FRR restarted\n"
		default:
			msg, code = fmt.Sprintf("not played: %q\n", b), 2
		}
		h.t.Logf("systemctl %s: %s", strings.Join(strings.Fields(string(b)), " "), strings.TrimSpace(msg))
		write(h.t, base+".out", msg, 0o644)
		write(h.t, base+".done", fmt.Sprint(code), 0o644)
	}
}

// watchTunnels samples how many of the gateway's tunnels have their
// CHILD_SA installed, until stop is called, which returns the longest
// time none had.
func (h *gatewayHost) watchTunnels() (stop func() time.Duration) {
	var (
		mu       sync.Mutex
		since    time.Time
		longest  time.Duration
		quit     = make(chan struct{})
		finished = make(chan struct{})
	)
	go func() {
		defer close(finished)
		for {
			select {
			case <-quit:
				return
			case <-time.After(50 * time.Millisecond):
			}
			n := 0
			for _, sa := range h.lab.IKESAs(0) {
				if sa != "" {
					n++
				}
			}
			mu.Lock()
			switch {
			case n == 0 && since.IsZero():
				since = time.Now()
			case n > 0 && !since.IsZero():
				longest = max(longest, time.Since(since))
				since = time.Time{}
			}
			mu.Unlock()
		}
	}()
	return func() time.Duration {
		close(quit)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		if !since.IsZero() {
			longest = max(longest, time.Since(since))
		}
		return longest
	}
}

// reinitiatedBound is the longest a flow across a tunnel install.sh
// re-initiates may stall (docs/vpn.md, "Installing an on-prem gateway"):
// the re-initiation (an IKE_SA and its CHILD_SA anew), not a BGP hold
// time, and never both tunnels at once.
const reinitiatedBound = 3 * time.Second

// TestInstalledVPN runs the rendered install.sh itself on the lab's
// on-prem gateway with both tunnels (one peer gateway), installed by a
// first run of install.sh (ROOT=, as onto an image) and up, with a flow
// from a cloud node to the control plane's address across the tunnels:
//
//   - run again with nothing changed, it touches no tunnel and the flow
//     goes on;
//   - run after a gen that changed both tunnels' connections (another IKE
//     proposal), it re-initiates them one at a time: never are both
//     down, each comes back with its BGP session, with the new proposal,
//     and the flow's longest gap is within reinitiatedBound (another ESP
//     proposal would change the XFRM interfaces' files too, which
//     install.sh has networkd make anew: the lab's tunnel devices are
//     charon's, so that path is not run here);
//   - tunnel0's key rotated as docs/vpn.md says (a new version pinned in
//     the source, Cloud VPN re-keyed first by the apply, install.sh right
//     after), it re-initiates tunnel0 alone, leaves tunnel1 untouched, and
//     both tunnels and BGP are back;
//   - the gateway restarted (its daemons stopped and started, its MSS
//     clamp's table gone and loaded by its installed unit), what install.sh
//     installed brings both tunnels and BGP back and the flow with them.
func TestInstalledVPN(t *testing.T) {
	t.Parallel()
	requireLab(t)
	src := oneGatewaySource(t)
	r := render(t, src)
	keys := psks{}
	h, lab := installedLab(t, r, keys)
	probe := flow(t, lab, r)
	defer probe.Stop()

	{ // Nothing changed.
		before := lab.IKESAs(0)
		stop := h.watchTunnels()
		start := time.Now()
		out, err := h.install(r.gwDir)
		took := time.Since(start)
		none := stop()
		time.Sleep(time.Second)
		n, gap := probe.Replies(start)
		t.Logf("install.sh again, nothing changed: %s; no tunnel up for %s at most; the flow's longest gap %s, %d echoes\n%s", took.Round(100*time.Millisecond), none, gap.Round(10*time.Millisecond), n, out)
		if err != nil {
			t.Fatalf("install.sh: %v", err)
		}
		for conn := range before {
			if want := "install.sh: " + conn + ": unchanged, not touched"; !strings.Contains(out, want) {
				t.Errorf("install.sh did not say %q", want)
			}
		}
		if after := lab.IKESAs(0); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("with nothing changed the tunnels' SAs changed: %v, then %v", before, after)
		}
		if none > 0 || gap > time.Second {
			t.Errorf("with nothing changed, no tunnel was up for %s and the flow stalled for %s", none, gap)
		}
	}

	{ // Both tunnels' connections changed.
		cue := filepath.Join(src, "cluster.cue")
		b, err := os.ReadFile(cue)
		if err != nil {
			t.Fatal(err)
		}
		asn := "onpremASN:      65010\n"
		if !bytes.Contains(b, []byte(asn)) {
			t.Fatalf("%s: no %q to add the ESP proposal after", cue, asn)
		}
		write(t, cue, string(bytes.Replace(b, []byte(asn), []byte(asn+"\t\t\t\tikeProposal: \"aes128gcm16-prfsha256-modp2048\"\n"), 1)), 0o644)
		r2 := render(t, src)
		before := lab.IKESAs(0)
		stop := h.watchTunnels()
		start := time.Now()
		out, err := h.install(r2.gwDir)
		took := time.Since(start)
		none := stop()
		if err := lab.WaitUp(30 * time.Second); err != nil {
			t.Error(err)
		}
		h.waitRoutes(r)
		time.Sleep(time.Second)
		after := lab.IKESAs(0)
		n, gap := probe.Replies(start)
		t.Logf("install.sh after the IKE proposal changed: %s; SAs %v, then %v; no tunnel up for %s at most; the flow's longest gap %s, %d echoes\n%s",
			took.Round(100*time.Millisecond), before, after, none, gap.Round(10*time.Millisecond), n, out)
		if err != nil {
			t.Fatalf("install.sh: %v", err)
		}
		// Each tunnel back with its BGP session before the next is touched.
		type step struct{ reinit, up int }
		var steps []step
		for conn := range before {
			st := step{strings.Index(out, "install.sh: "+conn+": installing its settings and re-initiating it"), strings.Index(out, "install.sh: "+conn+": up, BGP session with ")}
			if st.reinit < 0 || st.up < st.reinit {
				t.Errorf("install.sh did not re-initiate %s and then say it was up", conn)
			}
			steps = append(steps, st)
			if after[conn] == before[conn] || !strings.Contains(after[conn], " AES_GCM_16-128/PRF_HMAC_SHA2_256/") {
				t.Errorf("%s: SA %q, then %q: not re-initiated with the new IKE proposal (AES_GCM_16-128/PRF_HMAC_SHA2_256)", conn, before[conn], after[conn])
			}
		}
		sort.Slice(steps, func(i, j int) bool { return steps[i].reinit < steps[j].reinit })
		for k := 1; k < len(steps); k++ {
			if steps[k].reinit < steps[k-1].up {
				t.Errorf("install.sh re-initiated a tunnel before the one before it was up again")
			}
		}
		if none > 0 {
			t.Errorf("install.sh left the gateway without any tunnel for %s", none)
		}
		if gap > reinitiatedBound {
			t.Errorf("the flow stalled for %s, over the %s docs/vpn.md gives for a re-initiated tunnel", gap.Round(10*time.Millisecond), reinitiatedBound)
		}
		if out, err := lab.output(lab.sides[0].gw, "nft", "list", "table", "inet", "nodegen_vpn_mss_clamp"); err != nil || !bytes.Contains(out, []byte("maxseg size set 1366")) {
			t.Errorf("the MSS clamp after install.sh: %v\n%s", err, out)
		}
	}

	{ // tunnel0's key rotated: a new version pinned, Cloud VPN first.
		cue := filepath.Join(src, "cluster.cue")
		b, err := os.ReadFile(cue)
		if err != nil {
			t.Fatal(err)
		}
		t0 := r.vpn.Tunnels[0].SharedSecret
		pinned := fmt.Sprintf("sharedSecret: {secret: %q, version: %d}", t0.Secret, t0.Version)
		if !bytes.Contains(b, []byte(pinned)) {
			t.Fatalf("%s: no %q to pin a new version in", cue, pinned)
		}
		write(t, cue, string(bytes.Replace(b, []byte(pinned), []byte(fmt.Sprintf("sharedSecret: {secret: %q, version: %d}", t0.Secret, t0.Version+1)), 1)), 0o644)
		r3 := render(t, src)
		key := psks{}.key(t0.Secret)
		write(t, filepath.Join(h.state, "secret", fmt.Sprintf("%s@%d", t0.Secret, t0.Version+1)), key, 0o600)
		before := lab.IKESAs(0)
		start := time.Now()
		// terraform apply: Cloud VPN re-keys tunnel0, which is down from
		// then until the on-prem side has the key; install.sh right after.
		lab.Rekey(1, 0, key, false)
		out, err := h.install(r3.gwDir)
		took := time.Since(start)
		if err := lab.WaitUp(90 * time.Second); err != nil {
			t.Error(err)
		}
		h.waitRoutes(r)
		back := time.Since(start)
		time.Sleep(time.Second)
		after := lab.IKESAs(0)
		n, gap := probe.Replies(start)
		hold := time.Duration(r.vpn.BGPHoldTime()) * time.Second
		t.Logf("tunnel0's key at a new version, Cloud VPN first, install.sh right after: install.sh done %s after the apply, both tunnels and BGP back, routing over both, %s after; SAs %v, then %v; the flow's longest gap %s (BGP hold time %s), %d echoes\n%s",
			took.Round(100*time.Millisecond), back.Round(100*time.Millisecond), before, after, gap.Round(10*time.Millisecond), hold, n, out)
		if err != nil {
			t.Fatalf("install.sh: %v", err)
		}
		for _, want := range []string{"install.sh: tunnel0: installing its settings and re-initiating it", "install.sh: tunnel0: up, BGP session with ", "install.sh: tunnel1: unchanged, not touched"} {
			if !strings.Contains(out, want) {
				t.Errorf("install.sh did not say %q", want)
			}
		}
		if after["tunnel1"] != before["tunnel1"] || after["tunnel0"] == "" {
			t.Errorf("tunnel1's SA %q, then %q (want it untouched); tunnel0's %q, then %q (want it back)", before["tunnel1"], after["tunnel1"], before["tunnel0"], after["tunnel0"])
		}
		if gap > hold+5*time.Second {
			t.Errorf("the flow was interrupted for %s, longer than the BGP hold time %s: tunnel1 did not carry it", gap.Round(10*time.Millisecond), hold)
		}
	}

	{ // The gateway restarted.
		start := time.Now()
		s := lab.sides[0]
		// What a reboot loses besides the daemons: the clamp's table.
		lab.run(s.gw, "nft", "delete", "table", "inet", "nodegen_vpn_mss_clamp")
		conf, err := os.ReadFile(h.installedFRR)
		if err != nil {
			t.Fatal(err)
		}
		s.FRR = conf
		if err := lab.Restart(0, 30*time.Second); err != nil {
			t.Fatalf("the restarted gateway: %v", err)
		}
		h.noteVici()
		if out, err := h.inHost("systemctl", "start", h.clampUnit); err != nil {
			t.Fatalf("systemctl start %s: %v\n%s", h.clampUnit, err, out)
		}
		if err := lab.WaitUp(90 * time.Second); err != nil {
			t.Fatalf("the restarted gateway: %v", err)
		}
		h.waitRoutes(r)
		up := time.Since(start)
		probe.AwaitFlowing(10 * time.Second)
		n, gap := probe.Replies(start)
		t.Logf("the gateway restarted from what install.sh installed: both tunnels up, BGP established on both, routing over both after %s; the flow's longest gap %s, %d echoes since; SAs %v",
			up.Round(100*time.Millisecond), gap.Round(10*time.Millisecond), n, lab.IKESAs(0))
		if recent, _ := probe.Replies(time.Now().Add(-time.Second)); recent == 0 {
			t.Errorf("after the restart, the cloud node does not reach the control plane's address %s", r.cp)
		}
		if out, err := lab.output(s.gw, "nft", "list", "table", "inet", "nodegen_vpn_mss_clamp"); err != nil || !bytes.Contains(out, []byte("maxseg size set 1366")) {
			t.Errorf("the MSS clamp after the restart: %v\n%s", err, out)
		}
	}
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t testing.TB, f, s string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(f, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}
