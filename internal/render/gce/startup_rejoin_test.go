package gce_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// rejoinDeadline is the join deadline of the rejoin runs, far below the
// rendered one: a rejoin must end joined within it. A rejoin's five
// credential looks, reset and join ran past 30 s once on a loaded 2-core
// machine.
const rejoinDeadline = 60

// joinedNode runs script once on a fresh VM and returns the run, which
// must have joined.
func joinedNode(t *testing.T, script []byte, vm scripttest.VM, opt scripttest.Options) scripttest.Result {
	t.Helper()
	res := scripttest.Run(t, script, vm, opt)
	if res.ExitCode != 0 || len(res.JoinConfigs) != 1 {
		t.Fatalf("first boot: exit %d, %d joins\n%s", res.ExitCode, len(res.JoinConfigs), res.Stderr)
	}
	return res
}

// reboot runs script again on the directories an earlier run left.
// opt's StateDir, KubernetesDir, KubeletDir and join deadline are set here.
func reboot(t *testing.T, script []byte, vm scripttest.VM, prev scripttest.Result, opt ...scripttest.Options) scripttest.Result {
	t.Helper()
	var o scripttest.Options
	if len(opt) > 0 {
		o = opt[0]
	}
	o.StateDir, o.KubernetesDir, o.KubeletDir = prev.StateDir, prev.KubernetesDir, prev.KubeletDir
	constants := map[string]string{"JOIN_DEADLINE": strconv.Itoa(rejoinDeadline), "CREDENTIAL_CHECK_DELAY": "0.2"}
	maps.Copy(constants, o.Constants)
	o.Constants = constants
	return scripttest.Run(t, script, vm, o)
}

// assertJoined checks that res left a node the kubelet can start on:
// kubelet.conf naming a client certificate that parses, has not expired
// and is the node's, and the kubelet's configuration and flags.
func assertJoined(t *testing.T, res scripttest.Result, node string) {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(res.KubernetesDir, "kubelet.conf"))
	if err != nil {
		t.Fatalf("not joined: %v", err)
	}
	want := "client-certificate: " + filepath.Join(res.KubeletDir, "pki", "kubelet-client-current.pem")
	if !strings.Contains(string(conf), want) {
		t.Fatalf("kubelet.conf does not name %s:\n%s", want, conf)
	}
	b, err := os.ReadFile(filepath.Join(res.KubeletDir, "pki", "kubelet-client-current.pem"))
	if err != nil {
		t.Fatalf("not joined: %v", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("the kubelet's client certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:"+node || time.Now().After(cert.NotAfter) {
		t.Errorf("client certificate of %q until %v", cert.Subject.CommonName, cert.NotAfter)
	}
	for _, f := range []string{"config.yaml", "kubeadm-flags.env"} {
		if _, err := os.Stat(filepath.Join(res.KubeletDir, f)); err != nil {
			t.Errorf("not joined: %v", err)
		}
	}
}

// TestStartupScriptRejoinsHalfJoinedNode runs the GPU group's join script
// for real on a joined node whose kubelet credentials or directories were
// lost while kubelet.conf survived: it resets with kubeadm reset, joins
// again with the same JoinConfiguration (the same registration taints, the
// startup taint among them) and ends joined within its deadline. A node
// whose kubelet can start is left alone.
func TestStartupScriptRejoinsHalfJoinedNode(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	script := files[layout.StartupScriptPath(g.Name)]
	vm := gpuVM(src, g)
	pem := func(res scripttest.Result) string {
		return filepath.Join(res.KubeletDir, "pki", "kubelet-client-current.pem")
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, res scripttest.Result)
		want   string // the half-joined line names this
	}{
		{"pki emptied", func(t *testing.T, res scripttest.Result) {
			emptyDir(t, filepath.Join(res.KubeletDir, "pki"))
		}, "kubelet-client-current.pem, named in"},
		{"kubelet directory wiped (a local SSD's data lost)", func(t *testing.T, res scripttest.Result) {
			emptyDir(t, res.KubeletDir)
		}, "config.yaml, which kubeadm join writes, is missing"},
		{"config.yaml lost, the credentials kept", func(t *testing.T, res scripttest.Result) {
			must(t, os.Remove(filepath.Join(res.KubeletDir, "config.yaml")))
		}, "config.yaml, which kubeadm join writes, is missing"},
		{"kubeadm-flags.env lost", func(t *testing.T, res scripttest.Result) {
			must(t, os.Remove(filepath.Join(res.KubeletDir, "kubeadm-flags.env")))
		}, "kubeadm-flags.env, which kubeadm join writes, is missing"},
		{"client certificate expired", func(t *testing.T, res scripttest.Result) {
			must(t, os.WriteFile(pem(res), scripttest.KubeletClientPEM(t, vm.Instance, time.Now().Add(-time.Hour)), 0o600))
		}, "has expired"},
		{"client key of another certificate", func(t *testing.T, res scripttest.Result) {
			a := string(scripttest.KubeletClientPEM(t, vm.Instance, time.Now().Add(time.Hour)))
			b := string(scripttest.KubeletClientPEM(t, vm.Instance, time.Now().Add(time.Hour)))
			mixed := a[:strings.Index(a, "-----BEGIN EC PRIVATE KEY")] + b[strings.Index(b, "-----BEGIN EC PRIVATE KEY"):]
			must(t, os.WriteFile(pem(res), []byte(mixed), 0o600))
		}, "is not the key of its certificate"},
		{"client certificate truncated", func(t *testing.T, res scripttest.Result) {
			must(t, os.WriteFile(pem(res), []byte("-----BEGIN CERTIFICATE-----\nMIIB\n"), 0o600))
		}, "is not a certificate"},
		{"kubelet.conf empty (a power loss while it was written)", func(t *testing.T, res scripttest.Result) {
			must(t, os.WriteFile(filepath.Join(res.KubernetesDir, "kubelet.conf"), nil, 0o600))
		}, "names no client certificate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			first := joinedNode(t, script, vm, scripttest.Options{})
			c.damage(t, first)
			res := reboot(t, script, vm, first)
			if res.ExitCode != 0 || strings.Contains(res.Stderr, "ERROR") {
				t.Fatalf("exit %d\n%s", res.ExitCode, res.Stderr)
			}
			if !strings.Contains(res.Stderr, "half-joined: ") || !strings.Contains(res.Stderr, c.want) {
				t.Errorf("the log does not say why the node is half-joined (%q):\n%s", c.want, res.Stderr)
			}
			if len(res.KubeadmCalls) != 2 || res.KubeadmCalls[0] != "reset --force" || !strings.HasPrefix(res.KubeadmCalls[1], "join --config ") {
				t.Fatalf("kubeadm calls %q, want reset --force, then join", res.KubeadmCalls)
			}
			// The script gives up at its deadline; what it took past it is
			// the machine's (faultSlack).
			if res.Elapsed > rejoinDeadline*time.Second+faultSlack {
				t.Errorf("rejoined in %v, past the deadline of %ds", res.Elapsed, rejoinDeadline)
			}
			assertJoined(t, res, vm.Instance)
			assertSameRegistration(t, first.JoinConfigs[0], res.JoinConfigs[0], src, g)

			// The boot after is a joined node's: nothing to do.
			again := reboot(t, script, vm, res)
			if again.ExitCode != 0 || len(again.KubeadmCalls) != 0 || !strings.Contains(again.Stderr, "already joined") {
				t.Errorf("boot after the rejoin: exit %d, kubeadm calls %v\n%s", again.ExitCode, again.KubeadmCalls, again.Stderr)
			}
		})
	}
}

// TestStartupScriptKeepsJoinedNode: with kubelet.conf and usable
// credentials present, in a file or inline in kubelet.conf, a boot runs no
// kubeadm and changes nothing.
func TestStartupScriptKeepsJoinedNode(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	script := files[layout.StartupScriptPath(g.Name)]
	vm := gpuVM(src, g)
	for _, inline := range []bool{false, true} {
		first := joinedNode(t, script, vm, scripttest.Options{})
		if inline {
			conf := filepath.Join(first.KubernetesDir, "kubelet.conf")
			b, err := os.ReadFile(filepath.Join(first.KubeletDir, "pki", "kubelet-client-current.pem"))
			must(t, err)
			emptyDir(t, filepath.Join(first.KubeletDir, "pki"))
			data := base64.StdEncoding.EncodeToString(b)
			must(t, os.WriteFile(conf, []byte("apiVersion: v1\nkind: Config\nusers:\n- name: default-auth\n  user:\n"+
				"    client-certificate-data: "+data+"\n    client-key-data: \""+data+"\"\n"), 0o600))
		}
		before := snapshot(t, first.KubernetesDir, first.KubeletDir)
		res := reboot(t, script, vm, first)
		if res.ExitCode != 0 || len(res.KubeadmCalls) != 0 || !strings.Contains(res.Stderr, "already joined") || strings.Contains(res.Stderr, "half-joined") {
			t.Errorf("inline %v: exit %d, kubeadm calls %v\n%s", inline, res.ExitCode, res.KubeadmCalls, res.Stderr)
		}
		if after := snapshot(t, first.KubernetesDir, first.KubeletDir); !slices.Equal(before, after) {
			t.Errorf("inline %v: the boot changed the node's files:\nbefore %q\nafter  %q", inline, before, after)
		}
	}
}

// TestStartupScriptIgnoresCertificateRotation boots a joined node again
// and again while its kubelet rotates the client certificate every 20 ms as
// client-go's certificate store does (k8s.io/client-go v0.37.2
// util/certificate/certificate_store.go updateSymlink: the new pair in a
// file of its own, a symlink to it made under another name, the
// kubelet-client-current.pem symlink removed and the new one renamed into
// its place): no boot takes the node for half-joined, none resets it.
func TestStartupScriptIgnoresCertificateRotation(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	script := files[layout.StartupScriptPath(g.Name)]
	vm := gpuVM(src, g)
	first := joinedNode(t, script, vm, scripttest.Options{})
	pki := filepath.Join(first.KubeletDir, "pki")
	current := filepath.Join(pki, "kubelet-client-current.pem")
	var pairs [][]byte
	for range 8 {
		pairs = append(pairs, scripttest.KubeletClientPEM(t, vm.Instance, time.Now().Add(time.Hour)))
	}
	pairFile := func(n int) string { return filepath.Join(pki, "kubelet-client-"+strconv.Itoa(n)+".pem") }
	must(t, os.WriteFile(pairFile(0), pairs[0], 0o600))
	must(t, os.Remove(current))
	must(t, os.Symlink(pairFile(0), current))

	// The rotations; the first error is reported once the boots are
	// over (a reset, when a boot wrongly does one, empties pki).
	stop, done := make(chan struct{}), make(chan int)
	var rotateErr error
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			n++
			updated := filepath.Join(pki, "kubelet-client-updated.pem")
			for _, err := range []error{
				os.WriteFile(pairFile(n), pairs[n%len(pairs)], 0o600),
				os.Symlink(pairFile(n), updated),
				os.Remove(current),
				os.Rename(updated, current),
			} {
				if err != nil && rotateErr == nil {
					rotateErr = err
				}
			}
			// The store never deletes an earlier pair (certificate_store.go
			// removes only the symlinks): a boot that resolved the old
			// link still reads a whole pair, however slow the machine.
			// Between rotations, 20 ms: on a busy machine the gap between
			// the remove and the rename can last milliseconds, and at a
			// shorter period a look lands in a gap so often that five in a
			// row do (the kubelet rotates every few months).
			time.Sleep(20 * time.Millisecond)
		}
	}()
	const boots = 150
	lookedAgain := 0
	for i := 1; i <= boots; i++ {
		res := reboot(t, script, vm, first)
		if res.ExitCode != 0 || len(res.KubeadmCalls) != 0 || strings.Contains(res.Stderr, "half-joined") {
			close(stop)
			<-done
			t.Fatalf("boot %d of %d, the kubelet rotating its certificate: exit %d, kubeadm calls %q\n%s", i, boots, res.ExitCode, res.KubeadmCalls, res.Stderr)
		}
		if strings.Contains(res.Stderr, "looking again") {
			lookedAgain++
		}
	}
	close(stop)
	rotations := <-done
	if rotateErr != nil {
		t.Fatalf("rotating the certificate: %v", rotateErr)
	}
	t.Logf("%d boots during %d rotations: none reset the node; %d looked at the credentials again", boots, rotations, lookedAgain)
	if rotations < boots {
		t.Errorf("only %d rotations during %d boots", rotations, boots)
	}
}

// TestStartupScriptNeverResetsControlPlane: a half-joined node whose
// /etc/kubernetes holds a control plane's files is not reset.
func TestStartupScriptNeverResetsControlPlane(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	script := files[layout.StartupScriptPath(g.Name)]
	vm := gpuVM(src, g)
	for _, f := range []string{"admin.conf", "manifests/etcd.yaml"} {
		first := joinedNode(t, script, vm, scripttest.Options{})
		emptyDir(t, filepath.Join(first.KubeletDir, "pki"))
		p := filepath.Join(first.KubernetesDir, f)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte("kept"), 0o600))
		res := reboot(t, script, vm, first)
		if res.ExitCode != 1 || len(res.KubeadmCalls) != 0 || strings.Count(res.Stderr, "ERROR") != 1 ||
			!strings.Contains(res.Stderr, "ERROR: rejoin: ") || !strings.Contains(res.Stderr, "not resetting it") {
			t.Errorf("%s: exit %d, kubeadm calls %v\n%s", f, res.ExitCode, res.KubeadmCalls, res.Stderr)
		}
		if _, err := os.Stat(filepath.Join(first.KubernetesDir, "kubelet.conf")); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestStartupScriptWithoutOpenSSL: on an image without openssl the
// credentials are present but cannot be checked, and a joined node is
// kept rather than reset at every boot; missing credentials still rejoin.
func TestStartupScriptWithoutOpenSSL(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	script := files[layout.StartupScriptPath(g.Name)]
	vm := gpuVM(src, g)
	first := joinedNode(t, script, vm, scripttest.Options{})
	must(t, os.WriteFile(filepath.Join(first.KubeletDir, "pki", "kubelet-client-current.pem"),
		scripttest.KubeletClientPEM(t, vm.Instance, time.Now().Add(-time.Hour)), 0o600))
	res := reboot(t, script, vm, first, scripttest.Options{Hide: []string{"openssl"}})
	if res.ExitCode != 0 || len(res.KubeadmCalls) != 0 || !strings.Contains(res.Stderr, "openssl is not installed") {
		t.Errorf("exit %d, kubeadm calls %v\n%s", res.ExitCode, res.KubeadmCalls, res.Stderr)
	}
	// A join needs openssl to make the kubelet's bootstrap key, whose hash
	// the node CSR approver requires: the rejoin stops before kubeadm join.
	emptyDir(t, filepath.Join(first.KubeletDir, "pki"))
	res = reboot(t, script, vm, first, scripttest.Options{Hide: []string{"openssl"}})
	if res.ExitCode != 1 || len(res.KubeadmCalls) != 1 || !strings.Contains(res.Stderr, "half-joined") ||
		!strings.Contains(res.Stderr, "openssl is not installed: it makes the kubelet's bootstrap key") {
		t.Errorf("pki emptied: exit %d, kubeadm calls %v\n%s", res.ExitCode, res.KubeadmCalls, res.Stderr)
	}
}

// assertSameRegistration checks that the rejoin registers the Node as the
// first join did: the same JoinConfiguration, whose taints include the
// group's startup taint when it has one.
func assertSameRegistration(t *testing.T, first, again []byte, src *model.Source, g *model.NodeGroup) {
	t.Helper()
	if string(first) != string(again) {
		t.Errorf("the rejoin's JoinConfiguration differs from the first join's:\n%s\n---\n%s", first, again)
	}
	cfg, err := kubeadm.DecodeJoinConfiguration(again)
	if err != nil {
		t.Fatal(err)
	}
	var startup bool
	for _, tn := range cfg.NodeRegistration.Taints {
		startup = startup || strings.HasPrefix(tn.Key, model.StartupTaintPrefix)
	}
	if !startup {
		t.Errorf("the rejoin registers taints %v, without the startup taint of %s", cfg.NodeRegistration.Taints, g.Name)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// emptyDir deletes what dir holds, not dir.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range entries {
		must(t, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
}

// snapshot lists every file under dirs with its content.
func snapshot(t *testing.T, dirs ...string) []string {
	t.Helper()
	var out []string
	for _, d := range dirs {
		must(t, filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			out = append(out, p+"="+string(b))
			return err
		}))
	}
	return out
}

// TestStartupScriptRejoinsAfterLocalSSDLoss: a local-SSD group's node
// whose SSDs came back empty after a stop and start (the node image made a
// new RAID 0 and mounted it over the kubelet's and containerd's
// directories) while kubelet.conf survived on the boot disk rejoins.
func TestStartupScriptRejoinsAfterLocalSSDLoss(t *testing.T) {
	src, files := loadCapacitySource(t)
	g := src.NodeGroups["t4"]
	if g.LocalSSDCount == 0 {
		t.Fatal("the t4 group has no local SSDs")
	}
	script := files[layout.StartupScriptPath(g.Name)]
	vm := scripttest.VM{
		Project:       src.Cluster.GCP.Project,
		NumericID:     "123456789012",
		Zone:          g.Zones[0],
		Instance:      src.Cluster.BaseInstanceName(g) + "-s5d9",
		JoinToken:     joinToken,
		Secret:        "cap-join-token",
		SecretVersion: "latest",
	}
	kubelet, containerd := scripttest.OtherFilesystemDir(t), scripttest.OtherFilesystemDir(t)
	dirs := map[string]string{"BOOT_DIR": t.TempDir(), "CONTAINERD_DIR": containerd}
	first := joinedNode(t, script, vm, scripttest.Options{KubeletDir: kubelet, Constants: dirs})
	must(t, os.WriteFile(filepath.Join(containerd, "image"), []byte("layer"), 0o600))
	emptyDir(t, kubelet)
	emptyDir(t, containerd)
	res := reboot(t, script, vm, first, scripttest.Options{Constants: dirs})
	if res.ExitCode != 0 || len(res.KubeadmCalls) != 2 || res.KubeadmCalls[0] != "reset --force" || !strings.Contains(res.Stderr, "half-joined: ") {
		t.Fatalf("exit %d, kubeadm calls %q\n%s", res.ExitCode, res.KubeadmCalls, res.Stderr)
	}
	if res.Elapsed > rejoinDeadline*time.Second {
		t.Errorf("rejoined in %v, past the deadline of %ds", res.Elapsed, rejoinDeadline)
	}
	assertJoined(t, res, vm.Instance)
	if string(first.JoinConfigs[0]) != string(res.JoinConfigs[0]) {
		t.Errorf("the rejoin's JoinConfiguration differs from the first join's")
	}
}
