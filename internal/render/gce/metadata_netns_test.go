//go:build linux

package gce_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
)

// requireNetns skips the test unless it can create network namespaces
// and run ip, nft and curl in them; under NODEGEN_REQUIRE_NETNS=1 (CI)
// it fails instead.
func requireNetns(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range []string{"ip", "nft", "curl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("network namespace test needs %s (apt-get install iproute2 nftables curl)", strings.Join(missing, ", "))
	if os.Getenv("NODEGEN_REQUIRE_NETNS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// scriptFunction returns the definition of the named function in a
// rendered script, printed by a bash parser, or "" when there is none.
func scriptFunction(t *testing.T, script []byte, name string) string {
	t.Helper()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(script), "")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, st := range f.Stmts {
		if fd, ok := st.Cmd.(*syntax.FuncDecl); ok && fd.Name.Value == name {
			if err := syntax.NewPrinter().Print(&out, st); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out.String()
}

// listenIn listens on addr (network tcp4 or tcp6) inside the network
// namespace at nsPath; the listener keeps its namespace after the thread
// leaves it.
func listenIn(t *testing.T, nsPath, network, addr string) net.Listener {
	t.Helper()
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer unix.Close(orig)
	target, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	ln, lerr := net.Listen(network, addr)
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: it dies with this goroutine rather
		// than run other goroutines in the wrong namespace.
		t.Fatalf("returning to the test's network namespace: %v", err)
	}
	runtime.UnlockOSThread()
	if lerr != nil {
		t.Fatal(lerr)
	}
	return ln
}

var dropCounters = map[string]*regexp.Regexp{
	"IPv4": regexp.MustCompile(`ip daddr 169\.254\.169\.254 counter packets ([0-9]+) `),
	"IPv6": regexp.MustCompile(`ip6 daddr fd20:ce::254 counter packets ([0-9]+) `),
}

// TestMetadataBlockedForPods builds, in network namespaces of its own, a
// node that routes a pod's traffic over IPv4 and IPv6, and a network
// holding the metadata server's addresses (169.254.169.254 and
// fd20:ce::254) with a small HTTP server. It loads the rule set of a
// burst group's rendered join script in the node as its unit does at
// boot (nft -f), over the IPv4-only table earlier versions installed, and
// checks: pods cannot reach the metadata server on either address, the
// node can, pods reach other addresses, the earlier table is gone and
// loading twice leaves one rule per address.
func TestMetadataBlockedForPods(t *testing.T) {
	requireNetns(t)
	src := loadJoinSource(t, nil)
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	rules := scriptFunction(t, files[layout.StartupScriptPath("batch")], "metadata_block_rules")
	if rules == "" {
		t.Fatal("the batch group's script has no metadata_block_rules")
	}
	// The autoscaler's own group keeps the metadata server for its pods.
	if f := scriptFunction(t, files[layout.StartupScriptPath("ca")], "block_pod_metadata_access"); f != "" || src.Cluster.PodsMayReachMetadataServer(src.NodeGroups["batch"]) ||
		!src.Cluster.PodsMayReachMetadataServer(src.NodeGroups["ca"]) {
		t.Fatalf("the autoscaler's group ca blocks its pods' metadata access:\n%s", f)
	}

	prefix := fmt.Sprintf("ngt%d", os.Getpid()%100000)
	node, pod, meta := prefix+"-node", prefix+"-pod", prefix+"-meta"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{node, pod, meta} {
		run("ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		run("ip", "-n", ns, "link", "set", "lo", "up")
	}
	// pod (10.244.0.2, fd00:244::2) <-> node (10.244.0.1, fd00:244::1): the
	// pod's veth, as a CNI makes it.
	run("ip", "link", "add", prefix+"p", "netns", pod, "type", "veth", "peer", "name", prefix+"n", "netns", node)
	run("ip", "-n", pod, "addr", "add", "10.244.0.2/24", "dev", prefix+"p")
	run("ip", "-n", pod, "addr", "add", "fd00:244::2/64", "dev", prefix+"p", "nodad")
	run("ip", "-n", pod, "link", "set", prefix+"p", "up")
	run("ip", "-n", pod, "route", "add", "default", "via", "10.244.0.1")
	run("ip", "-n", pod, "-6", "route", "add", "default", "via", "fd00:244::1")
	run("ip", "-n", node, "addr", "add", "10.244.0.1/24", "dev", prefix+"n")
	run("ip", "-n", node, "addr", "add", "fd00:244::1/64", "dev", prefix+"n", "nodad")
	run("ip", "-n", node, "link", "set", prefix+"n", "up")
	// node (10.128.0.2, fd00:128::2) <-> the VPC side (10.128.0.1,
	// fd00:128::1, and the metadata server's addresses).
	run("ip", "link", "add", prefix+"x", "netns", node, "type", "veth", "peer", "name", prefix+"m", "netns", meta)
	run("ip", "-n", node, "addr", "add", "10.128.0.2/24", "dev", prefix+"x")
	run("ip", "-n", node, "addr", "add", "fd00:128::2/64", "dev", prefix+"x", "nodad")
	run("ip", "-n", node, "link", "set", prefix+"x", "up")
	run("ip", "-n", node, "route", "add", "169.254.169.254/32", "via", "10.128.0.1")
	run("ip", "-n", node, "-6", "route", "add", "fd20:ce::254/128", "via", "fd00:128::1")
	run("ip", "netns", "exec", node, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	run("ip", "netns", "exec", node, "sysctl", "-q", "-w", "net.ipv6.conf.all.forwarding=1")
	run("ip", "-n", meta, "addr", "add", "10.128.0.1/24", "dev", prefix+"m")
	run("ip", "-n", meta, "addr", "add", "fd00:128::1/64", "dev", prefix+"m", "nodad")
	run("ip", "-n", meta, "addr", "add", "169.254.169.254/32", "dev", prefix+"m")
	run("ip", "-n", meta, "addr", "add", "fd20:ce::254/128", "dev", prefix+"m", "nodad")
	run("ip", "-n", meta, "link", "set", prefix+"m", "up")
	run("ip", "-n", meta, "route", "add", "10.244.0.0/24", "via", "10.128.0.2")
	run("ip", "-n", meta, "-6", "route", "add", "fd00:244::/64", "via", "fd00:128::2")

	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "metadata ok")
	})}
	for _, l := range []net.Listener{listenIn(t, "/run/netns/"+meta, "tcp4", "0.0.0.0:80"), listenIn(t, "/run/netns/"+meta, "tcp6", "[::]:80")} {
		go srv.Serve(l)
	}
	t.Cleanup(func() { srv.Close() })

	get := func(ns, url string) error {
		out, err := exec.Command("ip", "netns", "exec", ns, "curl", "--silent", "--show-error", "--globoff", "--max-time", "3", url).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
		}
		if string(out) != "metadata ok" {
			return fmt.Errorf("answer %q", out)
		}
		return nil
	}
	metadataURLs := map[string]string{"IPv4": "http://169.254.169.254/computeMetadata/v1/", "IPv6": "http://[fd20:ce::254]/computeMetadata/v1/"}
	otherURLs := map[string]string{"IPv4": "http://10.128.0.1/", "IPv6": "http://[fd00:128::1]/"}
	// Without the rule the pod reaches the metadata server: the topology
	// routes it, so the checks below can fail.
	for family, url := range metadataURLs {
		if err := get(pod, url); err != nil {
			t.Fatalf("before the rule, pod -> metadata (%s): %v", family, err)
		}
	}
	// The table an earlier version of the script installed.
	nft := func(ruleset string) {
		t.Helper()
		cmd := exec.Command("ip", "netns", "exec", node, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(ruleset)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nft -f: %v\n%s", err, out)
		}
	}
	nft("table ip nodegen_metadata {\n\tchain forward {\n\t\ttype filter hook forward priority -10; policy accept;\n\t\tip daddr 169.254.169.254 counter drop\n\t}\n}\n")
	load := func() {
		t.Helper()
		out, err := exec.Command("bash", "-c", "set -euo pipefail\n"+rules+"\nmetadata_block_rules").Output()
		if err != nil {
			t.Fatalf("metadata_block_rules: %v", err)
		}
		nft(string(out))
	}
	load()
	load()

	for family, url := range metadataURLs {
		if err := get(pod, url); err == nil {
			t.Errorf("pod -> metadata server (%s): reached it with the rule installed", family)
		}
		if err := get(node, url); err != nil {
			t.Errorf("node -> metadata server (%s): %v", family, err)
		}
		if err := get(pod, otherURLs[family]); err != nil {
			t.Errorf("pod -> another address (%s): %v", family, err)
		}
	}
	out, err := exec.Command("ip", "netns", "exec", node, "nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "table ip nodegen_metadata") {
		t.Errorf("the earlier IPv4-only table is left:\n%s", out)
	}
	for family, counter := range dropCounters {
		if n := len(counter.FindAllString(string(out), -1)); n != 1 {
			t.Errorf("after two loads the node has %d %s metadata rules, want 1:\n%s", n, family, out)
		}
		// The pod's packets were dropped by this rule, not lost elsewhere.
		if m := counter.FindStringSubmatch(string(out)); m == nil || m[1] == "0" {
			t.Errorf("the %s metadata rule dropped no packet:\n%s", family, out)
		}
	}
}

// unitName is the metadata block's systemd unit, and rulesPath the rule
// set it loads, as the scripts name them.
const unitName, rulesPath = "nodegen-metadata-block.service", "/etc/nodegen/metadata-block.nft"

// The rendered scripts install the block on burst groups only: the rule
// set loaded now, the rule set and the unit written, the unit enabled.
func TestMetadataBlockOnlyOffTheAutoscalerGroup(t *testing.T) {
	src := loadJoinSource(t, nil)
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range src.Groups() {
		if !g.Cloud() {
			continue
		}
		vm := scripttest.VM{Project: src.Cluster.GCP.Project, NumericID: "1", Zone: g.Zones[0],
			Instance: src.Cluster.BaseInstanceName(g) + "-a1b2", JoinToken: joinToken, MetadataKey: "lab-join-token"}
		res := scripttest.Run(t, files[layout.StartupScriptPath(g.Name)], vm, scripttest.Options{})
		if res.ExitCode != 0 {
			t.Fatalf("%s: exit %d\n%s", g.Name, res.ExitCode, res.Stderr)
		}
		rules, rulesErr := os.ReadFile(filepath.Join(res.Etc, strings.TrimPrefix(rulesPath, "/etc/")))
		unit, unitErr := os.ReadFile(filepath.Join(res.Etc, "systemd", "system", unitName))
		if src.Cluster.PodsMayReachMetadataServer(g) {
			if len(res.NftRulesets) != 0 || len(res.SystemctlCalls) != 0 || rulesErr == nil || unitErr == nil {
				t.Errorf("%s, the autoscaler's group: %d nft calls, systemctl %q, rules written %v, unit written %v; want none",
					g.Name, len(res.NftRulesets), res.SystemctlCalls, rulesErr == nil, unitErr == nil)
			}
			continue
		}
		if rulesErr != nil || unitErr != nil {
			t.Fatalf("%s: the rule set or the unit is not written: %v, %v", g.Name, rulesErr, unitErr)
		}
		if len(res.NftRulesets) != 1 || res.NftRulesets[0] != string(rules) {
			t.Errorf("%s: nft loaded %q, want the rule set written, %q", g.Name, res.NftRulesets, rules)
		}
		if want := []string{"daemon-reload", "enable " + unitName}; !slices.Equal(res.SystemctlCalls, want) {
			t.Errorf("%s: systemctl %q, want %q", g.Name, res.SystemctlCalls, want)
		}
		if !strings.Contains(string(unit), "ExecStart=/usr/sbin/nft -f "+rulesPath+"\n") {
			t.Errorf("%s: the unit does not load %s:\n%s", g.Name, rulesPath, unit)
		}
	}
}

// TestMetadataBlockUnit: the unit the script writes is one systemd
// accepts as it is (systemd-analyze verify, which reads it as systemd
// does and prints what it would ignore or refuse), ordered before the
// kubelet and required by it, so that at every boot the block is in
// place before the kubelet can start a pod, and the kubelet does not
// start without it.
func TestMetadataBlockUnit(t *testing.T) {
	src := loadJoinSource(t, nil)
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	script := files[layout.StartupScriptPath("batch")]
	fn := scriptFunction(t, script, "metadata_block_unit")
	if fn == "" {
		t.Fatal("the batch group's script has no metadata_block_unit")
	}
	unit, err := exec.Command("bash", "-c", "set -euo pipefail\n"+fn+"\nmetadata_block_unit").Output()
	if err != nil {
		t.Fatalf("metadata_block_unit: %v", err)
	}
	sections := map[string]map[string][]string{}
	var section string
	for _, line := range strings.Split(strings.TrimSpace(string(unit)), "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			sections[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("unit line %q is neither a section nor a setting", line)
			}
			sections[section][k] = append(sections[section][k], strings.Fields(v)...)
		}
	}
	for _, c := range []struct{ section, key, want string }{
		{"Unit", "Before", "kubelet.service"},
		{"Install", "RequiredBy", "kubelet.service"},
		{"Service", "Type", "oneshot"},
		{"Service", "RemainAfterExit", "yes"},
	} {
		if !slices.Contains(sections[c.section][c.key], c.want) {
			t.Errorf("[%s] %s= is %q, want %s in it:\n%s", c.section, c.key, sections[c.section][c.key], c.want, unit)
		}
	}
	if got := strings.Join(sections["Service"]["ExecStart"], " "); got != "/usr/sbin/nft -f "+rulesPath {
		t.Errorf("ExecStart=%s, want /usr/sbin/nft -f %s", got, rulesPath)
	}

	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is not installed; .ci/run installs systemd")
		}
		t.Skip("systemd-analyze not installed")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, unitName)
	must(t, os.WriteFile(path, unit, 0o644))
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s\nunit:\n%s", err, out, unit)
	}
}
