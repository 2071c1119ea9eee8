//go:build linux

package gce_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
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

// listenIn listens on addr inside the network namespace at nsPath; the
// listener keeps its namespace after the thread leaves it.
func listenIn(t *testing.T, nsPath, addr string) net.Listener {
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
	ln, lerr := net.Listen("tcp4", addr)
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

var dropCounter = regexp.MustCompile(`ip daddr 169\.254\.169\.254 counter packets ([0-9]+) `)

// TestMetadataBlockedForPods builds, in network namespaces of its own, a
// node that routes a pod's traffic, and a network holding the metadata
// server's address 169.254.169.254 with a small HTTP server. It runs the
// rule installation of a burst group's rendered join script in the node
// and checks: pods cannot reach the metadata server, the node can, pods
// reach other addresses, and installing twice leaves one rule.
func TestMetadataBlockedForPods(t *testing.T) {
	requireNetns(t)
	src := loadJoinSource(t, nil)
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	block := scriptFunction(t, files[layout.StartupScriptPath("batch")], "block_pod_metadata_access")
	if block == "" {
		t.Fatal("the batch group's script has no block_pod_metadata_access")
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
	// pod (10.244.0.2) <-> node (10.244.0.1): the pod's veth, as a CNI makes it.
	run("ip", "link", "add", prefix+"p", "netns", pod, "type", "veth", "peer", "name", prefix+"n", "netns", node)
	run("ip", "-n", pod, "addr", "add", "10.244.0.2/24", "dev", prefix+"p")
	run("ip", "-n", pod, "link", "set", prefix+"p", "up")
	run("ip", "-n", pod, "route", "add", "default", "via", "10.244.0.1")
	run("ip", "-n", node, "addr", "add", "10.244.0.1/24", "dev", prefix+"n")
	run("ip", "-n", node, "link", "set", prefix+"n", "up")
	// node (10.128.0.2) <-> the VPC side (10.128.0.1, and 169.254.169.254).
	run("ip", "link", "add", prefix+"x", "netns", node, "type", "veth", "peer", "name", prefix+"m", "netns", meta)
	run("ip", "-n", node, "addr", "add", "10.128.0.2/24", "dev", prefix+"x")
	run("ip", "-n", node, "link", "set", prefix+"x", "up")
	run("ip", "-n", node, "route", "add", "169.254.169.254/32", "via", "10.128.0.1")
	run("ip", "netns", "exec", node, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	run("ip", "-n", meta, "addr", "add", "10.128.0.1/24", "dev", prefix+"m")
	run("ip", "-n", meta, "addr", "add", "169.254.169.254/32", "dev", prefix+"m")
	run("ip", "-n", meta, "link", "set", prefix+"m", "up")
	run("ip", "-n", meta, "route", "add", "10.244.0.0/24", "via", "10.128.0.2")

	ln := listenIn(t, "/run/netns/"+meta, "0.0.0.0:80")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "metadata ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	get := func(ns, url string) error {
		out, err := exec.Command("ip", "netns", "exec", ns, "curl", "--silent", "--show-error", "--max-time", "3", url).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
		}
		if string(out) != "metadata ok" {
			return fmt.Errorf("answer %q", out)
		}
		return nil
	}
	const metadataURL, otherURL = "http://169.254.169.254/computeMetadata/v1/", "http://10.128.0.1/"
	// Without the rule the pod reaches the metadata server: the topology
	// routes it, so the checks below can fail.
	if err := get(pod, metadataURL); err != nil {
		t.Fatalf("before the rule, pod -> metadata: %v", err)
	}

	install := func() {
		t.Helper()
		cmd := exec.Command("ip", "netns", "exec", node, "bash", "-c", "set -euo pipefail\n"+block+"\nblock_pod_metadata_access")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("block_pod_metadata_access: %v\n%s", err, out)
		}
	}
	install()
	install()

	if err := get(pod, metadataURL); err == nil {
		t.Error("pod -> metadata server: reached it with the rule installed")
	}
	if err := get(node, metadataURL); err != nil {
		t.Errorf("node -> metadata server: %v", err)
	}
	if err := get(pod, otherURL); err != nil {
		t.Errorf("pod -> another address: %v", err)
	}
	out, err := exec.Command("ip", "netns", "exec", node, "nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "ip daddr 169.254.169.254"); n != 1 {
		t.Errorf("after two installations the node has %d metadata rules, want 1:\n%s", n, out)
	}
	// The pod's packets were dropped by this rule, not lost elsewhere.
	if m := dropCounter.FindStringSubmatch(string(out)); m == nil || m[1] == "0" {
		t.Errorf("the metadata rule dropped no packet:\n%s", out)
	}
}

// The rendered scripts call the installation on burst groups only.
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
		want := 1
		if src.Cluster.PodsMayReachMetadataServer(g) {
			want = 0
		}
		if len(res.NftRulesets) != want {
			t.Errorf("%s: %d nft calls, want %d", g.Name, len(res.NftRulesets), want)
		}
	}
}
