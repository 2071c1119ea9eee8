package onprem_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
)

// TestMSSClampLoads checks gw-a's MSS clamp with its consumers: the
// unit passes systemd-analyze verify and loads the file install.sh
// installs; nft loads the file into a fresh network namespace twice, as a
// restart of the unit does (the second load replaces the table whole),
// and the table holds each tunnel's clamp at its payload MTU less 40.
func TestMSSClampLoads(t *testing.T) {
	files := vpnFiles(t, 1, 1)
	dir := layout.OnpremVPNGatewayDir("gw-a") + "/"
	unit, nft, install := files[dir+layout.MSSClampUnitFile], files[dir+layout.MSSClampFile], files[dir+layout.OnpremVPNInstallFile]
	if !bytes.Contains(unit, []byte("\nExecStart=/usr/sbin/nft -f /etc/nodegen/vpn-mss-clamp.nft\n")) ||
		!bytes.Contains(install, []byte(`install -m 0644 "$stage/`+layout.MSSClampFile+`" /etc/nodegen/vpn-mss-clamp.nft`)) {
		t.Errorf("the unit does not load the file where install.sh puts it:\n%s", unit)
	}
	ci := os.Getenv("CI") != ""
	for _, tool := range []string{"systemd-analyze", "nft", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			if ci {
				t.Fatalf("%s is not installed; .ci/run installs systemd, nftables and util-linux", tool)
			}
			t.Skipf("%s not installed", tool)
		}
	}
	tmp := t.TempDir()
	unitPath := filepath.Join(tmp, "nodegen-vpn-mss-clamp.service")
	nftPath := filepath.Join(tmp, "clamp.nft")
	if err := os.WriteFile(unitPath, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nftPath, nft, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("systemd-analyze", "verify", unitPath).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s\nunit:\n%s", err, out, unit)
	}
	if os.Geteuid() != 0 && !ci {
		t.Skip("loading the table takes root (a network namespace of its own)")
	}
	out, err := exec.Command("unshare", "--net", "sh", "-ec", `nft -f "$1"; nft -f "$1"; nft list ruleset`, "sh", nftPath).CombinedOutput()
	if err != nil {
		t.Fatalf("nft -f twice in a fresh namespace: %v\n%s", err, out)
	}
	for _, want := range []string{
		`oifname "vpn-tunnel0" meta nfproto ipv4 tcp flags syn / syn,rst tcp option maxseg size > 1366 tcp option maxseg size set 1366`,
		`iifname "vpn-tunnel1" meta nfproto ipv4 tcp flags syn / syn,rst tcp option maxseg size > 1366 tcp option maxseg size set 1366`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the loaded ruleset has no %q:\n%s", want, out)
		}
	}
	if n := strings.Count(string(out), "table inet nodegen_vpn_mss_clamp"); n != 1 {
		t.Errorf("%d tables after two loads, want 1:\n%s", n, out)
	}
}
