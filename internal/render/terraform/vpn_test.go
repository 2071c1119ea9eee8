package terraform_test

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// vpnCUE is a cluster.gcp.network (networkCUE's) with an HA VPN to one or
// two on-prem gateways, the HA VPN gateway's addresses declared or not.
func vpnCUE(gateways int, addresses bool) string {
	gws := `{name: "gw-a", address: "192.0.2.10"}`
	if gateways == 2 {
		gws += `, {name: "gw-b", address: "192.0.2.11"}`
	}
	ha := ""
	if addresses {
		ha = `haVpnAddresses: ["198.51.100.20", "198.51.100.21"]`
	}
	return networkCUE("cloud-nat", `"udp/4789"`) + `
	gcp: network: subnetworkRange: "10.128.0.0/20"
	gcp: network: vpn: {
		cloudRouterASN: 64514
		onpremASN:      4200000001
		peerGateways: [` + gws + `]
		` + ha + `
		tunnels: [
			{insideRange: "169.254.10.0/30", sharedSecret: secret: "psk-0"},
			{insideRange: "169.254.11.4/30", sharedSecret: {secret: "psk-1", version: 3}, advertisedRoutePriority: 200},
		]
		bgpKeepaliveInterval: 30
	}`
}

// TestVPNMatchesProviderSchema: vpn.tf, with one peer gateway and two,
// holds to the provider's schema (the secret's data source and the alert
// policies included), and the check catches a wrong attribute in each
// resource type it uses.
func TestVPNMatchesProviderSchema(t *testing.T) {
	for _, gws := range []int{1, 2} {
		_, files := testsrc.Spec{Cluster: vpnCUE(gws, false)}.MustRender(t)
		if _, ok := files[layout.TerraformVPNPath]; !ok {
			t.Fatalf("%d gateways: no %s", gws, layout.TerraformVPNPath)
		}
		for _, e := range checkProviderSchema(t, files) {
			t.Errorf("%d gateways: %s", gws, e)
		}
		if u := parseLBModule(t, files).unresolved(); len(u) > 0 {
			t.Errorf("%d gateways: references to nothing in the module: %v", gws, u)
		}
	}
	_, files := testsrc.Spec{Cluster: vpnCUE(2, false)}.MustRender(t)
	// The root module passes the HA VPN's addresses on, which the source's
	// haVpnAddresses take: an output of the module.
	root := parseTF(t, files, layout.TerraformRootMainPath)
	out := blocksOf(root, "output", layout.VPNAddressesOutput)
	if len(out) != 1 {
		t.Fatalf("the root module has %d outputs %s", len(out), layout.VPNAddressesOutput)
	}
	if vs := out[0].Body.Attributes["value"].Expr.Variables(); len(vs) != 1 || vs[0].RootName() != "module" || attrNames(vs[0]) != "nodegroups."+layout.VPNAddressesOutput {
		t.Errorf("root output %s is not the module's", layout.VPNAddressesOutput)
	}
	if len(blocksOf(parseTF(t, files, layout.TerraformVPNPath), "output", layout.VPNAddressesOutput)) != 1 {
		t.Errorf("the module has no output %s", layout.VPNAddressesOutput)
	}
	for _, c := range []struct{ old, new string }{
		{"redundancy_type", "redundancy"},
		{"  vpn_gateway_interface ", "  vpn_interface "},
		{"keepalive_interval", "keep_alive_interval"},
		{"advertised_route_priority", "route_priority"},
		{"session_initialization_mode", "session_mode"},
		{"  ip_range ", "  ip_cidr_range "},
		{`  secret  = "psk-0"`, `  secret_id = "psk-0"`},
		{"shared_secret_wo ", "shared_secret_write_only "},
		{`  version = "1"`, `  versions = "1"`},
		{`shared_secret_wo_version        = "1"`, `shared_secret_wo_versions       = "1"`},
		{"ike_version                     = 2", `ike_version                     = "two"`},
		{"per_series_aligner", "aligner"},
		{"evaluation_missing_data", "missing_data"},
		{"threshold_value", "threshold"},
		{"mime_type", "mimetype"},
		{"  user_labels = {", "  labels = {"},
		{"  conditions {", "  condition {"},
	} {
		broken := maps.Clone(files)
		broken[layout.TerraformVPNPath] = []byte(strings.Replace(string(files[layout.TerraformVPNPath]), c.old, c.new, 1))
		if string(broken[layout.TerraformVPNPath]) == string(files[layout.TerraformVPNPath]) {
			t.Fatalf("%q not in vpn.tf", c.old)
		}
		if len(checkProviderSchema(t, broken)) == 0 {
			t.Errorf("replacing %q by %q in vpn.tf passes the schema check", c.old, c.new)
		}
	}
}

// TestVPNOnlyWithVPN: without cluster.gcp.network.vpn there is no vpn.tf
// and no on-prem VPN file; with it but without the HA VPN gateway's
// addresses there is vpn.tf and still no on-prem file.
func TestVPNOnlyWithVPN(t *testing.T) {
	onprem := func(files layout.Files) []string {
		var out []string
		for _, p := range files.Paths() {
			if strings.HasPrefix(p, layout.OnpremVPNDir+"/") {
				out = append(out, p)
			}
		}
		return out
	}
	_, files := testsrc.Spec{Cluster: networkCUE("cloud-nat", "")}.MustRender(t)
	if _, ok := files[layout.TerraformVPNPath]; ok {
		t.Errorf("%s rendered without a vpn", layout.TerraformVPNPath)
	}
	if p := onprem(files); p != nil {
		t.Errorf("on-prem VPN files without a vpn: %v", p)
	}
	_, files = testsrc.Spec{Cluster: vpnCUE(1, false)}.MustRender(t)
	if _, ok := files[layout.TerraformVPNPath]; !ok {
		t.Errorf("no %s", layout.TerraformVPNPath)
	}
	if p := onprem(files); p != nil {
		t.Errorf("on-prem VPN files without the HA VPN gateway's addresses: %v", p)
	}
}

// tfTunnel is what vpn.tf says of a tunnel: its HA VPN interface, the
// external gateway's interface it ends on, the Cloud Router's interface
// range and its BGP peer.
type tfTunnel struct {
	vpnIface, peerIface   int64
	ipRange, cloud, peer  string
	peerASN, priority     int64
	secret, secretVersion string
}

func tfVPN(t *testing.T, files layout.Files) (asn int64, keepalive int64, ranges []string, peers map[int64]string, tunnels map[string]*tfTunnel) {
	t.Helper()
	b := parseTF(t, files, layout.TerraformVPNPath)
	tunnels = map[string]*tfTunnel{}
	get := func(name string) *tfTunnel {
		if tunnels[name] == nil {
			tunnels[name] = &tfTunnel{}
		}
		return tunnels[name]
	}
	num := func(b *hclsyntax.Body, name string) int64 {
		n, _ := constValue(t, b, name).AsBigFloat().Int64()
		return n
	}
	peers = map[int64]string{}
	for _, r := range blocksOf(b, "resource", gce.TFExternalVPNGateway) {
		for _, i := range blocksOf(r.Body, "interface") {
			peers[num(i.Body, "id")] = constValue(t, i.Body, "ip_address").AsString()
		}
	}
	for _, r := range blocksOf(b, "resource", gce.TFRouter) {
		for _, bgp := range blocksOf(r.Body, "bgp") {
			asn, keepalive = num(bgp.Body, "asn"), num(bgp.Body, "keepalive_interval")
			for _, a := range blocksOf(bgp.Body, "advertised_ip_ranges") {
				ranges = append(ranges, constValue(t, a.Body, "range").AsString())
			}
		}
	}
	for _, r := range blocksOf(b, "resource", gce.TFVPNTunnel) {
		tt := get(r.Labels[1])
		tt.vpnIface, tt.peerIface = num(r.Body, "vpn_gateway_interface"), num(r.Body, "peer_external_gateway_interface")
	}
	for _, r := range blocksOf(b, "ephemeral", gce.TFSecretVersion) {
		tt := get(r.Labels[1])
		tt.secret, tt.secretVersion = constValue(t, r.Body, "secret").AsString(), constValue(t, r.Body, "version").AsString()
	}
	for _, r := range blocksOf(b, "resource", gce.TFRouterInterface) {
		get(r.Labels[1]).ipRange = constValue(t, r.Body, "ip_range").AsString()
	}
	for _, r := range blocksOf(b, "resource", gce.TFRouterPeer) {
		tt := get(r.Labels[1])
		tt.cloud, tt.peer = constValue(t, r.Body, "ip_address").AsString(), constValue(t, r.Body, "peer_ip_address").AsString()
		tt.peerASN, tt.priority = num(r.Body, "peer_asn"), num(r.Body, "advertised_route_priority")
	}
	return asn, keepalive, ranges, peers, tunnels
}

// iniValues reads the Key=Value lines of a systemd unit file's section.
func iniValues(t *testing.T, src []byte, section string) map[string]string {
	t.Helper()
	out := map[string]string{}
	cur := ""
	sc := bufio.NewScanner(strings.NewReader(string(src)))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || l[0] == '#' || l[0] == ';':
		case l[0] == '[':
			cur = strings.Trim(l, "[]")
		case cur == section:
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				t.Fatalf("line %q is not Key=Value", l)
			}
			out[k] = v
		}
	}
	return out
}

// swanctlSettings reads a strongSwan settings file (strongswan.conf(5):
// sections "name {" ... "}", "key = value" lines, '#' comments) into its
// keys by dotted path; includes are listed as "include" entries.
func swanctlSettings(t *testing.T, src []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	var path []string
	n := 0
	for _, l := range strings.Split(string(src), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || l[0] == '#':
		case strings.HasPrefix(l, "include "):
			out[fmt.Sprintf("include.%d", n)] = strings.TrimPrefix(l, "include ")
			n++
		case strings.HasSuffix(l, "{"):
			path = append(path, strings.TrimSpace(strings.TrimSuffix(l, "{")))
		case l == "}":
			if len(path) == 0 {
				t.Fatalf("unbalanced }")
			}
			path = path[:len(path)-1]
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				t.Fatalf("line %q is neither a section nor a setting", l)
			}
			out[strings.Join(append(slices.Clone(path), strings.TrimSpace(k)), ".")] = strings.TrimSpace(v)
		}
	}
	if len(path) != 0 {
		t.Fatalf("sections left open: %v", path)
	}
	return out
}

// TestVPNBothEndsAgree reads both ends as rendered, vpn.tf with Terraform's
// parser and each on-prem gateway's files, and checks that they describe
// the same tunnels: per tunnel the on-prem gateway Cloud VPN expects is
// the one whose files hold it, the remote address is the HA VPN
// interface's, the XFRM interface's ID is strongSwan's if_id, its address
// is the Cloud Router's BGP peer address in the Cloud Router interface's
// /30, FRR's neighbor is the Cloud Router's address with its ASN and
// keepalive, and each side accepts what the other advertises.
func TestVPNBothEndsAgree(t *testing.T) {
	for _, gws := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d gateways", gws), func(t *testing.T) {
			_, files := testsrc.Spec{Cluster: vpnCUE(gws, true)}.MustRender(t)
			asn, keepalive, ranges, peers, tunnels := tfVPN(t, files)
			if len(tunnels) != 2 {
				t.Fatalf("%d tunnels in vpn.tf, want 2", len(tunnels))
			}
			if slices.Sort(ranges); !slices.Equal(ranges, []string{"10.128.0.0/20"}) {
				t.Errorf("the Cloud Router advertises %v, want the subnetwork's range", ranges)
			}
			haAddr := []string{"198.51.100.20", "198.51.100.21"}
			gwName := map[string]string{"192.0.2.10": "gw-a", "192.0.2.11": "gw-b"}
			seen := map[string]bool{}
			for name, tt := range tunnels {
				if want := fmt.Sprintf("tunnel%d", tt.vpnIface); name != want {
					t.Errorf("%s leaves from HA VPN interface %d", name, tt.vpnIface)
				}
				gwAddr := peers[tt.peerIface]
				gw := gwName[gwAddr]
				if gw == "" {
					t.Fatalf("%s ends on external interface %d (%q), no declared gateway", name, tt.peerIface, gwAddr)
				}
				dir := layout.OnpremVPNGatewayDir(gw) + "/"
				conn, ok := files[dir+layout.SwanctlConnDir+"/"+name+".conf"]
				if !ok {
					t.Fatalf("%s ends on %s, whose files have no connection %s", name, gw, name)
				}
				seen[name] = true
				s := swanctlSettings(t, conn)
				c := "connections." + name
				for k, want := range map[string]string{
					c + ".version":                         "2",
					c + ".remote_addrs":                    haAddr[tt.vpnIface],
					c + ".remote.id":                       haAddr[tt.vpnIface],
					c + ".local.id":                        gwAddr,
					c + ".local.auth":                      "psk",
					c + ".remote.auth":                     "psk",
					c + ".children." + name + ".local_ts":  "0.0.0.0/0",
					c + ".children." + name + ".remote_ts": "0.0.0.0/0",
				} {
					if s[k] != want {
						t.Errorf("%s: %s = %q, want %q", name, k, s[k], want)
					}
				}
				ifID := s[c+".children."+name+".if_id_in"]
				if ifID == "" || s[c+".children."+name+".if_id_out"] != ifID {
					t.Errorf("%s: if_id_in %q, if_id_out %q: want one ID both ways", name, ifID, s[c+".children."+name+".if_id_out"])
				}
				var netdev, network map[string]string
				var ifname string
				for _, p := range files.Paths() {
					if strings.HasPrefix(p, dir+layout.SystemdNetworkDir+"/") && strings.HasSuffix(p, ".netdev") {
						if x := iniValues(t, files[p], "Xfrm"); x["InterfaceId"] == ifID {
							netdev, ifname = x, iniValues(t, files[p], "NetDev")["Name"]
							network = iniValues(t, files[strings.TrimSuffix(p, ".netdev")+".network"], "Network")
							if m := iniValues(t, files[strings.TrimSuffix(p, ".netdev")+".network"], "Match"); m["Name"] != ifname {
								t.Errorf("%s: the .network matches %q, the .netdev names %q", name, m["Name"], ifname)
							}
						}
					}
				}
				if netdev == nil {
					t.Fatalf("%s: no XFRM interface with InterfaceId=%s in %s", name, ifID, dir)
				}
				if len(ifname) > 15 || netdev["Independent"] != "yes" {
					t.Errorf("%s: interface %q (over 15 characters, or not independent: %q)", name, ifname, netdev["Independent"])
				}
				if want := tt.peer + "/30"; network["Address"] != want {
					t.Errorf("%s: %s has address %q, the Cloud Router's peer is %s", name, ifname, network["Address"], want)
				}
				if tt.ipRange != tt.cloud+"/30" {
					t.Errorf("%s: router interface %s, BGP peer's own address %s", name, tt.ipRange, tt.cloud)
				}
				frr := string(files[dir+layout.FRRConfFile])
				for _, l := range []string{
					fmt.Sprintf("router bgp %d\n", tt.peerASN),
					fmt.Sprintf(" neighbor %s remote-as %d\n", tt.cloud, asn),
					fmt.Sprintf(" neighbor %s timers %d %d\n", tt.cloud, keepalive, 3*keepalive),
					fmt.Sprintf("  neighbor %s route-map nodegen-from-cloud in\n", tt.cloud),
					fmt.Sprintf("  neighbor %s route-map nodegen-to-cloud out\n", tt.cloud),
					"ip prefix-list nodegen-cloud seq 5 permit 10.128.0.0/20\n",
					"ip prefix-list nodegen-onprem seq 5 permit 10.20.0.0/16\n",
					"ip prefix-list nodegen-onprem seq 10 permit 192.168.7.0/24\n",
					"  network 10.20.0.0/16\n",
					"  network 192.168.7.0/24\n",
				} {
					if !strings.Contains(frr, l) {
						t.Errorf("%s: %s's frr.conf lacks %q", name, gw, l)
					}
				}
				top := swanctlSettings(t, files[dir+layout.SwanctlConfFile])
				if top["include.0"] != "conf.d/*.conf" || top["include.1"] != "secrets.d/*.conf" {
					t.Errorf("%s: swanctl.conf includes %v", gw, top)
				}
			}
			if len(seen) != 2 {
				t.Errorf("the on-prem files hold %v", seen)
			}
			if tunnels["tunnel1"].secret != "psk-1" || tunnels["tunnel1"].secretVersion != "3" || tunnels["tunnel1"].priority != 200 {
				t.Errorf("tunnel1: %+v", tunnels["tunnel1"])
			}
			for _, p := range files.Paths() {
				if strings.Contains(p, "secrets.d") {
					t.Errorf("%s rendered: the keys stay out of out/", p)
				}
			}
		})
	}
}

// podTolerationsOnCloudNodes decodes the manifests nodegen renders for pods on
// the autoscaler's (cloud) node, strictly into their API types, and the
// autoscaler chart's tolerations value, and returns each one's
// tolerations by where they come from.
func podTolerationsOnCloudNodes(t *testing.T, files layout.Files) map[string][]corev1.Toleration {
	t.Helper()
	out := map[string][]corev1.Toleration{}
	for _, p := range []string{layout.NodeCSRApproverPath, layout.JoinTokenRenewerPath, layout.NodeLifecyclePath} {
		objs, err := k8sdecode.Objects(files[p])
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, o := range objs {
			switch o := o.(type) {
			case *appsv1.Deployment:
				out[p+" "+o.Name] = o.Spec.Template.Spec.Tolerations
			case *batchv1.CronJob:
				out[p+" "+o.Name] = o.Spec.JobTemplate.Spec.Template.Spec.Tolerations
			}
		}
	}
	var values struct {
		Tolerations []corev1.Toleration `json:"tolerations"`
	}
	// The chart's values hold more than tolerations: only they are read.
	if err := sigsyaml.Unmarshal(files[layout.AutoscalerValuesPath], &values); err != nil {
		t.Fatalf("%s: %v", layout.AutoscalerValuesPath, err)
	}
	out[layout.AutoscalerValuesPath] = values.Tolerations
	if len(out) != 4 {
		t.Fatalf("found the pods of %v, want the approver, the renewer, the node collector and the autoscaler", slices.Sorted(maps.Keys(out)))
	}
	return out
}

// TestTunnelLossTolerations: with a VPN, every pod nodegen renders for the
// cloud nodes tolerates the node lifecycle controller's NoExecute taints
// of an unreachable or not-ready node for tunnelLossToleration, as the
// scheduler's helpers match tolerations; without one, none declares them
// (the API server's 300s default applies).
func TestTunnelLossTolerations(t *testing.T) {
	taints := []corev1.Taint{
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	}
	for _, c := range []struct {
		name, cue string
		want      int64 // seconds; 0: no toleration
	}{
		{"default", vpnCUE(1, true), 600},
		{"set", vpnCUE(2, true) + "\ngcp: network: vpn: tunnelLossToleration: \"15m30s\"", 930},
		{"no vpn", networkCUE("cloud-nat", ""), 0},
	} {
		_, files := testsrc.Spec{Cluster: c.cue}.MustRender(t)
		for where, tols := range podTolerationsOnCloudNodes(t, files) {
			for _, taint := range taints {
				var match []corev1.Toleration
				for _, tol := range tols {
					if corev1helpers.TolerationsTolerateTaint(klog.Background(), []corev1.Toleration{tol}, &taint, false) {
						match = append(match, tol)
					}
				}
				switch {
				case c.want == 0 && len(match) > 0:
					t.Errorf("%s: %s tolerates %s without a VPN: %v", c.name, where, taint.Key, match)
				case c.want == 0:
				case len(match) != 1 || match[0].TolerationSeconds == nil || *match[0].TolerationSeconds != c.want:
					t.Errorf("%s: %s tolerates %s with %v, want one toleration of %ds", c.name, where, taint.Key, match, c.want)
				}
			}
		}
	}
}

// TestVPNInstallScript runs each gateway's install.sh under bash into a
// scratch root, with a gcloud on PATH that answers for the tunnels'
// secrets only: every file lands where the services read it, each
// tunnel's key is written (as hexadecimal, byte for byte, readable by root
// only) with the IDs of both ends, FRR's bgpd is turned on, nothing is
// started; a secret that reads empty stops it. The scripts also pass
// bash -n and shellcheck (when installed).
func TestVPNInstallScript(t *testing.T) {
	for _, gws := range []int{1, 2} {
		_, files := testsrc.Spec{Cluster: vpnCUE(gws, true)}.MustRender(t)
		for g, gw := range []string{"gw-a", "gw-b"}[:gws] {
			t.Run(fmt.Sprintf("%d gateways, %s", gws, gw), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "gw")
				prefix := layout.OnpremVPNGatewayDir(gw) + "/"
				for _, p := range files.Paths() {
					if rel, ok := strings.CutPrefix(p, prefix); ok {
						if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(filepath.Join(dir, rel), files[p], 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
				script := filepath.Join(dir, layout.OnpremVPNInstallFile)
				if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
					t.Fatalf("bash -n: %v\n%s", err, out)
				}
				if _, err := exec.LookPath("shellcheck"); err == nil {
					if out, err := exec.Command("shellcheck", "--shell=bash", "--severity=style", script).CombinedOutput(); err != nil {
						t.Errorf("shellcheck: %v\n%s", err, out)
					}
				}
				bin := t.TempDir()
				// psk-0's key holds bytes a quoted string could not: a quote, a
				// backslash, a newline.
				gcloud := `#!/bin/bash
[[ "$1 $2" == "auth list" ]] && { echo admin@example.com; exit 0; }
[[ "$1 $2 $3" == "secrets versions access" && "$6" == "--project=acme-hybrid-ai" ]] || { echo "unexpected: $*" >&2; exit 2; }
case "$4 $5" in
"1 --secret=psk-0") printf 'k"e\\y\n0' ;;
"3 --secret=psk-1") printf 'key-1' ;;
"1 --secret=empty") ;;
*) echo "no such secret version: $4 $5" >&2; exit 1 ;;
esac
`
				if err := os.WriteFile(filepath.Join(bin, "gcloud"), []byte(gcloud), 0o755); err != nil {
					t.Fatal(err)
				}
				root := t.TempDir()
				if err := os.MkdirAll(filepath.Join(root, "etc/frr"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "etc/frr/daemons"), []byte("zebra=yes\nbgpd=no\nospfd=no\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command("bash", script)
				cmd.Env = append(os.Environ(), "ROOT="+root, "PATH="+bin+":"+os.Getenv("PATH"))
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("install.sh: %v\n%s", err, out)
				}
				for _, p := range files.Paths() {
					rel, ok := strings.CutPrefix(p, prefix)
					if !ok || rel == layout.OnpremVPNInstallFile {
						continue
					}
					dst := map[string]string{
						layout.SwanctlConfFile:    "etc/swanctl/swanctl.conf",
						layout.StrongswanConfFile: "etc/strongswan.d/nodegen.conf",
						layout.FRRConfFile:        "etc/frr/frr.conf",
						layout.MSSClampFile:       "etc/nodegen/vpn-mss-clamp.nft",
						layout.MSSClampUnitFile:   "etc/systemd/system/nodegen-vpn-mss-clamp.service",
					}[rel]
					switch {
					case strings.HasPrefix(rel, layout.SwanctlConnDir+"/"):
						dst = "etc/swanctl/conf.d/" + path.Base(rel)
					case strings.HasPrefix(rel, layout.SystemdNetworkDir+"/"):
						dst = "etc/systemd/network/" + path.Base(rel)
					}
					got, err := os.ReadFile(filepath.Join(root, dst))
					if err != nil || string(got) != string(files[p]) {
						t.Errorf("%s is not installed as /%s: %v", rel, dst, err)
					}
				}
				keys := map[string]string{"tunnel0": fmt.Sprintf("%x", "k\"e\\y\n0"), "tunnel1": fmt.Sprintf("%x", "key-1")}
				remote := []string{"198.51.100.20", "198.51.100.21"}
				local := []string{"192.0.2.10", "192.0.2.11"}[g]
				var want []string
				for i, name := range []string{"tunnel0", "tunnel1"} {
					if gws == 2 && i != g {
						continue
					}
					want = append(want, name+".conf")
					f := filepath.Join(root, "etc/swanctl/secrets.d", name+".conf")
					fi, err := os.Stat(f)
					if err != nil {
						t.Fatalf("%s's key: %v", name, err)
					}
					if fi.Mode().Perm() != 0o600 {
						t.Errorf("%s's key file has mode %v, want 0600", name, fi.Mode().Perm())
					}
					raw, _ := os.ReadFile(f)
					s := swanctlSettings(t, raw)
					for k, v := range map[string]string{"secret": "0x" + keys[name], "id-local": local, "id-remote": remote[i]} {
						if got := s["secrets.ike-"+name+"."+k]; got != v {
							t.Errorf("%s's secrets.ike-%s.%s = %q, want %q", name, name, k, got, v)
						}
					}
				}
				ents, _ := os.ReadDir(filepath.Join(root, "etc/swanctl/secrets.d"))
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				if !slices.Equal(names, want) {
					t.Errorf("secrets.d holds %v, want %v", names, want)
				}
				if d, _ := os.ReadFile(filepath.Join(root, "etc/frr/daemons")); string(d) != "zebra=yes\nbgpd=yes\nospfd=no\n" {
					t.Errorf("/etc/frr/daemons is %q", d)
				}

				// A secret without a payload stops the install.
				b, _ := os.ReadFile(script)
				b = regexp.MustCompile(`(?m)^(stage_secret \S+) \S+ \S+`).ReplaceAll(b, []byte("$1 empty 1"))
				if err := os.WriteFile(script, b, 0o644); err != nil {
					t.Fatal(err)
				}
				cmd = exec.Command("bash", script)
				cmd.Env = append(os.Environ(), "ROOT="+t.TempDir(), "PATH="+bin+":"+os.Getenv("PATH"))
				out, err := cmd.CombinedOutput()
				if err == nil || !strings.Contains(string(out), "install.sh: secret empty (version 1) is empty") {
					t.Errorf("install.sh with an empty secret: %v\n%s", err, out)
				}
			})
		}
	}
}

// attrNames joins the attribute names of a traversal after its root.
func attrNames(tr hcl.Traversal) string {
	var names []string
	for i := 1; i < len(tr); i++ {
		names = append(names, attrName(tr, i))
	}
	return strings.Join(names, ".")
}

// TestVPNSecretVersionPinned: each tunnel's key is read at the source's
// version, the same on both ends: vpn.tf's ephemeral read and the tunnel's
// shared_secret_wo_version, and the on-prem install.sh's gcloud call; no
// data source resolves a version at plan time.
func TestVPNSecretVersionPinned(t *testing.T) {
	_, files := testsrc.Spec{Cluster: vpnCUE(1, true)}.MustRender(t)
	body := parseTF(t, files, layout.TerraformVPNPath)
	if d := blocksOf(body, "data", gce.TFSecretVersion); len(d) > 0 {
		t.Errorf("vpn.tf reads %d secret versions through a data source", len(d))
	}
	install := string(files[layout.OnpremVPNGatewayDir("gw-a")+"/"+layout.OnpremVPNInstallFile])
	for name, want := range map[string]string{"tunnel0": "1", "tunnel1": "3"} {
		literal := func(b *hclsyntax.Block, attr string) string {
			a, ok := b.Body.Attributes[attr]
			if !ok {
				t.Errorf("%s %s has no %s", b.Type, name, attr)
				return ""
			}
			v, diags := a.Expr.Value(nil)
			if diags.HasErrors() {
				t.Errorf("%s %s.%s is not a literal: %s", b.Type, name, attr, diags.Error())
				return ""
			}
			return v.AsString()
		}
		eph := blocksOf(body, "ephemeral", gce.TFSecretVersion, name)
		tun := blocksOf(body, "resource", gce.TFVPNTunnel, name)
		if len(eph) != 1 || len(tun) != 1 {
			t.Fatalf("%s: %d ephemeral secret versions, %d tunnels", name, len(eph), len(tun))
		}
		if got := literal(eph[0], "version"); got != want {
			t.Errorf("ephemeral %s reads version %q, want %q", name, got, want)
		}
		if got := literal(tun[0], "shared_secret_wo_version"); got != want {
			t.Errorf("tunnel %s's shared_secret_wo_version is %q, want %q", name, got, want)
		}
		secret := map[string]string{"tunnel0": "psk-0", "tunnel1": "psk-1"}[name]
		if line := fmt.Sprintf("\nstage_secret %s %s %s ", name, secret, want); !strings.Contains(install, line) {
			t.Errorf("install.sh does not read %s at version %s (%q)", secret, want, line)
		}
	}
}
