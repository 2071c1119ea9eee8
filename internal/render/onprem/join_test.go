package onprem_test

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/agree"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/render/onprem"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

const token = "abcdef.0123456789abcdef"

// declaredSource is the tests' example with two declared servers in its
// onprem group.
func declaredSource(t *testing.T) (*model.Source, layout.Files) {
	t.Helper()
	dir := testsrc.Copy(t, map[string]string{"onprem-gpu.cue": `nodeGroups: "onprem-gpu": {
	kind:        "onprem"
	description: "On-prem A100 servers"
	gpu: {type: "nvidia-tesla-a100", count: 8}
	nodes: {
		"gpu-01.dc1": {cpu: 128, memoryGiB: 1024}
		"gpu-02.dc1": {cpu: 128, memoryGiB: 1024}
	}
	labels: {
		"example.com/pool":     "gpu-onprem"
		"example.com/location": "onprem"
	}
	taints: [{key: "nvidia.com/gpu", value: "present", effect: "NoSchedule"}, {key: "example.com/onprem", effect: "PreferNoSchedule"}]
}
`})
	l, err := source.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := l.Fleet.Clusters[0]
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	return src, files
}

// run is one run of a join script.
type run struct {
	code           int
	stdout, stderr string
	// argv holds the arguments of every external command the script ran,
	// kubeadm and the others, one call a line.
	argv []string
	// config and mode are the file kubeadm join --config was given, read
	// by the stub kubeadm while the script waited for it; nil when kubeadm
	// did not run.
	config []byte
	mode   string
	tmp    string // the script's TMPDIR
	dir    string // its working directory
}

// runScript runs script under bash with args and stdin, with a PATH of
// stubs only: a kubeadm that records its arguments and the configuration
// file (exiting with kubeadmExit), and, for every other command the script
// may run, a wrapper that records its arguments and runs the real one.
func runScript(t *testing.T, script []byte, stdin string, kubeadmExit int, args ...string) run {
	t.Helper()
	dir := t.TempDir()
	bin, capDir, tmp := filepath.Join(dir, "bin"), filepath.Join(dir, "capture"), filepath.Join(dir, "tmp")
	for _, d := range []string{bin, capDir, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	real := map[string]string{}
	for _, c := range []string{"cat", "cp", "stat", "mktemp", "chmod", "rm"} {
		p, err := exec.LookPath(c)
		if err != nil {
			t.Skipf("no %s", c)
		}
		real[c] = p
	}
	argvLog := filepath.Join(capDir, "argv")
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!"+bash+"\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"cat", "mktemp", "chmod", "rm"} {
		write(c, "printf '%s\\n' \""+c+" $*\" >>"+shq(argvLog)+"\nexec "+shq(real[c])+" \"$@\"\n")
	}
	write("kubeadm", "printf '%s\\n' \"kubeadm $*\" >>"+shq(argvLog)+"\n"+
		"if [[ \"$1 $2\" == 'join --config' ]]; then\n"+
		"\t"+shq(real["cp"])+" -- \"$3\" "+shq(filepath.Join(capDir, "config"))+"\n"+
		"\t"+shq(real["stat"])+" -c %a -- \"$3\" >"+shq(filepath.Join(capDir, "mode"))+"\n"+
		"fi\n"+
		"exit "+string(rune('0'+kubeadmExit))+"\n")
	path := filepath.Join(dir, "join.sh")
	if err := os.WriteFile(path, script, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, append([]string{path}, args...)...)
	if os.Geteuid() != 0 {
		// The script joins only as root: as another user, it runs as root
		// in a user namespace of its own (no privilege needed).
		unshare, err := exec.LookPath("unshare")
		if err != nil || exec.Command(unshare, "--user", "--map-root-user", "true").Run() != nil {
			t.Skip("not root, and no user namespace to run the script as root in")
		}
		cmd = exec.Command(unshare, append([]string{"--user", "--map-root-user", bash, path}, args...)...)
	}
	cmd.Env = []string{"PATH=" + bin, "TMPDIR=" + tmp, "LC_ALL=C"}
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := run{tmp: tmp, dir: dir}
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		r.code = ee.ExitCode()
	}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	if b, err := os.ReadFile(argvLog); err == nil {
		r.argv = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	if b, err := os.ReadFile(filepath.Join(capDir, "config")); err == nil {
		r.config = b
		m, err := os.ReadFile(filepath.Join(capDir, "mode"))
		if err != nil {
			t.Fatal(err)
		}
		r.mode = strings.TrimSpace(string(m))
	}
	return r
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// kubeadmCalls are the kubeadm calls of a run.
func (r run) kubeadmCalls() []string {
	var out []string
	for _, a := range r.argv {
		if strings.HasPrefix(a, "kubeadm ") {
			out = append(out, a)
		}
	}
	return out
}

// noSecret fails the test if the token shows in an external command's
// arguments, the output or a file left in TMPDIR.
func (r run) noSecret(t *testing.T) {
	t.Helper()
	for _, a := range r.argv {
		if strings.Contains(a, token) || strings.Contains(a, "0123456789abcdef") {
			t.Errorf("the token is in the arguments of %q", a)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "0123456789abcdef") {
		t.Errorf("the token's secret is in the output:\n%s%s", r.stdout, r.stderr)
	}
	left, err := os.ReadDir(r.tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("the script left %v in TMPDIR", left)
	}
}

// TestOnpremJoinJoinsADeclaredNode runs the rendered join script of an
// onprem group for one of its declared nodes, as root with the token on
// standard input, and decodes what kubeadm join was given with kubeadm's
// v1beta4 types: the node's name, the group's taints and labels, the
// providerID set-provider-id.sh gives, the cluster's discovery, the
// token; the file is mode 0600 and gone afterwards, and the token is in no
// command's arguments.
func TestOnpremJoinJoinsADeclaredNode(t *testing.T) {
	src, files := declaredSource(t)
	g := src.NodeGroups["onprem-gpu"]
	script := files[layout.OnpremJoinPath(g.Name)]
	if script == nil {
		t.Fatalf("%s not rendered", layout.OnpremJoinPath(g.Name))
	}
	for name, tc := range map[string]struct {
		stdin string
		args  []string
	}{
		"token on stdin":          {token + "\n", []string{"gpu-02.dc1"}},
		"token without a newline": {token, []string{"gpu-02.dc1"}},
		"token from a file":       {"", []string{"--token-file", "FILE", "gpu-02.dc1"}},
	} {
		t.Run(name, func(t *testing.T) {
			args := slices.Clone(tc.args)
			if i := slices.Index(args, "FILE"); i >= 0 {
				args[i] = filepath.Join(t.TempDir(), "token")
				if err := os.WriteFile(args[i], []byte(token+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := runScript(t, script, tc.stdin, 0, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			r.noSecret(t)
			calls := r.kubeadmCalls()
			if len(calls) != 1 || !strings.HasPrefix(calls[0], "kubeadm join --config "+r.tmp+"/") || len(strings.Fields(calls[0])) != 4 {
				t.Fatalf("kubeadm calls %q, want one join --config <file in TMPDIR>", calls)
			}
			if r.mode != "600" {
				t.Errorf("the join configuration (with the token) was mode %s, want 600", r.mode)
			}
			cfg, err := kubeadm.DecodeJoinConfiguration(r.config)
			if err != nil {
				t.Fatalf("%v\n%s", err, r.config)
			}
			bt := cfg.Discovery.BootstrapToken
			if bt == nil || bt.Token != token || bt.APIServerEndpoint != "10.20.0.10:6443" ||
				!slices.Equal(bt.CACertHashes, src.Cluster.CACertHashes) || len(bt.CACertHashes) != 1 {
				t.Errorf("discovery %+v, want the token, %s and %v", bt, "10.20.0.10:6443", src.Cluster.CACertHashes)
			}
			node, err := agree.FromJoinConfiguration(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if node.Name != "gpu-02.dc1" {
				t.Errorf("name %q", node.Name)
			}
			wantLabels := map[string]string{"example.com/pool": "gpu-onprem", "example.com/location": "onprem", model.GroupLabel: "onprem-gpu"}
			if !maps.Equal(node.Labels, wantLabels) {
				t.Errorf("labels %v, want %v", node.Labels, wantLabels)
			}
			wantTaints := []model.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: "NoSchedule"}, {Key: "example.com/onprem", Effect: "PreferNoSchedule"}}
			if !slices.Equal(node.Taints, wantTaints) {
				t.Errorf("taints %v, want %v", node.Taints, wantTaints)
			}
			if node.ProviderID != "gce://onprem.invalid/onprem/gpu-02.dc1" || node.ProviderID != model.UnmanagedProviderID(node.Name) {
				t.Errorf("provider-id %q, want set-provider-id.sh's %q", node.ProviderID, model.UnmanagedProviderID(node.Name))
			}
			if err := agree.CheckOnprem(&src.Cluster, g, node); err != nil {
				t.Error(err)
			}
			if cfg.Patches != nil || cfg.Timeouts != nil {
				t.Errorf("patches %+v, timeouts %+v: an on-prem join sets neither", cfg.Patches, cfg.Timeouts)
			}
		})
	}
	t.Run("kubeadm join fails", func(t *testing.T) {
		r := runScript(t, script, token, 1, "gpu-01.dc1")
		if r.code != 1 || !strings.Contains(r.stderr, "ERROR kubeadm join failed with exit 1") {
			t.Errorf("exit %d, want 1 with the failure\n%s", r.code, r.stderr)
		}
		r.noSecret(t)
	})
}

// TestOnpremJoinRefuses: a node the group does not declare, a name that is
// no Node name, a token that is no bootstrap token or none, a usage error:
// each refused before kubeadm runs, the token never echoed.
func TestOnpremJoinRefuses(t *testing.T) {
	_, files := declaredSource(t)
	script := files[layout.OnpremJoinPath("onprem-gpu")]
	for name, tc := range map[string]struct {
		stdin string
		args  []string
		code  int
		msg   string
	}{
		"undeclared node":    {token, []string{"gpu-03.dc1"}, 1, "gpu-03.dc1 is not a declared node of group onprem-gpu (gpu-01.dc1 gpu-02.dc1)"},
		"not a Node name":    {token, []string{"GPU_01"}, 1, "'GPU_01' is not a Node name"},
		"shell in the name":  {token, []string{"$(touch x)"}, 1, "is not a Node name"},
		"bad token":          {"abcdef.0123456789abcdeX\n", []string{"gpu-01.dc1"}, 1, "is not a bootstrap token"},
		"no token":           {"", []string{"gpu-01.dc1"}, 1, "no join token on standard input"},
		"missing token file": {"", []string{"--token-file", "/nonexistent/token", "gpu-01.dc1"}, 1, "cannot be read"},
		"no node":            {token, nil, 2, "usage:"},
		"two nodes":          {token, []string{"gpu-01.dc1", "gpu-02.dc1"}, 2, "usage:"},
		"token as a flag":    {"", []string{"--token=" + token, "gpu-01.dc1"}, 2, "usage:"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runScript(t, script, tc.stdin, 0, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("exit %d, want %d with %q\n%s", r.code, tc.code, tc.msg, r.stderr)
			}
			if c := r.kubeadmCalls(); len(c) > 0 {
				t.Errorf("kubeadm ran: %q", c)
			}
			if strings.Contains(r.stderr, "0123456789abcde") {
				t.Errorf("the token shows in the output:\n%s", r.stderr)
			}
		})
	}
	t.Run("not root", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "join.sh")
		if err := os.WriteFile(path, script, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", path, "gpu-01.dc1")
		if os.Geteuid() == 0 {
			// As root: the script in a user namespace of its own, as nobody.
			unshare, err := exec.LookPath("unshare")
			if err != nil || exec.Command(unshare, "--user", "true").Run() != nil {
				t.Skip("no unprivileged user namespace to run the script as another user in")
			}
			cmd = exec.Command(unshare, "--user", "bash", path, "gpu-01.dc1")
		}
		cmd.Stdin = strings.NewReader(token)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "run this as root") {
			t.Errorf("as nobody: %v\n%s", err, out)
		}
	})
}

// TestOnpremJoinDryRun: --dry-run prints the JoinConfiguration kubeadm
// would get, the token's secret redacted, and runs no kubeadm.
func TestOnpremJoinDryRun(t *testing.T) {
	src, files := declaredSource(t)
	r := runScript(t, files[layout.OnpremJoinPath("onprem-gpu")], token, 0, "--dry-run", "gpu-01.dc1")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if len(r.kubeadmCalls()) > 0 {
		t.Errorf("kubeadm ran: %q", r.kubeadmCalls())
	}
	r.noSecret(t)
	cfg, err := kubeadm.DecodeJoinConfiguration([]byte(r.stdout))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if got := cfg.Discovery.BootstrapToken.Token; got != "abcdef.<redacted>" {
		t.Errorf("token %q, want its secret redacted", got)
	}
	node, err := agree.FromJoinConfiguration(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if node.Name != "gpu-01.dc1" {
		t.Errorf("name %q", node.Name)
	}
	if err := agree.CheckOnprem(&src.Cluster, src.NodeGroups["onprem-gpu"], node); err != nil {
		t.Error(err)
	}
}

// TestOnpremJoinUndeclaredGroup: a group that declares no nodes takes any
// Node name; with cluster.onpremProviderID "none" the join sets no
// providerID.
func TestOnpremJoinUndeclaredGroup(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["onprem-gpu"]
	if len(g.Nodes) != 0 {
		t.Fatal("the tests' example declares on-prem nodes; the test wants a group without")
	}
	r := runScript(t, files[layout.OnpremJoinPath(g.Name)], token, 0, "any-server-7")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	cfg, err := kubeadm.DecodeJoinConfiguration(r.config)
	if err != nil {
		t.Fatal(err)
	}
	if pid, _ := cfg.ExtraArg("provider-id"); cfg.NodeRegistration.Name != "any-server-7" || pid != model.UnmanagedProviderID("any-server-7") {
		t.Errorf("name %q, provider-id %q", cfg.NodeRegistration.Name, pid)
	}

	src.Cluster.OnpremProviderID = model.OnpremProviderIDNone
	script, err := onprem.JoinScript(src, g, "# header\n")
	if err != nil {
		t.Fatal(err)
	}
	r = runScript(t, script, token, 0, "any-server-7")
	if r.code != 0 {
		t.Fatalf("onpremProviderID none: exit %d\n%s", r.code, r.stderr)
	}
	cfg, err = kubeadm.DecodeJoinConfiguration(r.config)
	if err != nil {
		t.Fatal(err)
	}
	if pid, ok := cfg.ExtraArg("provider-id"); ok {
		t.Errorf("onpremProviderID none: the join sets provider-id %q", pid)
	}
}

// TestOnpremJoinEscapes: strings the schema refuses, put into the model
// directly, come out of the script as they went in: a label value and a
// taint value with shell and YAML specials and line breaks, a group name
// with a quote. A label NodeRestriction refuses a kubelet stays out of the
// join; an '@', which the script's substitution cannot tell from a
// placeholder, and the heredoc's delimiter are refused at render time.
func TestOnpremJoinEscapes(t *testing.T) {
	src, _ := testsrc.Example(t)
	g := *src.NodeGroups["onprem-gpu"]
	odd := "it's \"$(touch pwned)\" `id` ${HOME} \\ #: - [x] {y} *\nEOF\n'end"
	g.Name = "on'prem"
	g.NodeLabels = map[string]string{
		"example.com/odd":                        odd,
		model.GroupLabel:                         g.Name,
		"node-restriction.kubernetes.io/trusted": "yes",
		"kubernetes.io/role":                     "gpu",
		"node.kubernetes.io/pool":                "gpu",
	}
	g.Taints = []model.Taint{{Key: "example.com/odd", Value: odd, Effect: "NoSchedule"}}
	g.Nodes = map[string]model.FixedNode{"gpu-01": {CPU: 1, MemoryGiB: 1}}
	script, err := onprem.JoinScript(src, &g, "# header\n")
	if err != nil {
		t.Fatal(err)
	}
	r := runScript(t, script, token, 0, "gpu-01")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stderr, script)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "pwned")); err == nil {
		t.Fatal("a label value ran a command")
	}
	if !strings.Contains(r.stderr, "nodegen-onprem-join[on'prem]: ") {
		t.Errorf("the group's name is not in the log as it is:\n%s", r.stderr)
	}
	cfg, err := kubeadm.DecodeJoinConfiguration(r.config)
	if err != nil {
		t.Fatalf("%v\n%s", err, r.config)
	}
	labels, _ := cfg.ExtraArg("node-labels")
	want := "example.com/odd=" + odd + ",node.kubernetes.io/pool=gpu," + model.GroupLabel + "=on'prem"
	if labels != want {
		t.Errorf("node-labels %q, want %q (the kubelet's own namespaces kept, node-restriction.kubernetes.io/ and kubernetes.io/role left out)", labels, want)
	}
	if len(cfg.NodeRegistration.Taints) != 1 || cfg.NodeRegistration.Taints[0].Value != odd {
		t.Errorf("taints %+v, want value %q", cfg.NodeRegistration.Taints, odd)
	}
	if !strings.Contains(string(script), "# node-restriction.kubernetes.io/trusted, kubernetes.io/role: label-onprem-nodes.sh") &&
		!strings.Contains(string(script), "kubernetes.io/role, node-restriction.kubernetes.io/trusted: label-onprem-nodes.sh") {
		t.Errorf("the script does not say which labels label-onprem-nodes.sh sets:\n%s", script)
	}

	for value, msg := range map[string]string{"a@b": "'@'", "x\n" + model.JoinHeredocDelimiter + "\n": "heredoc delimiter"} {
		g.NodeLabels = map[string]string{"example.com/x": value}
		if _, err := onprem.JoinScript(src, &g, "# header\n"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("a label value %q: got %v, want the renderer to refuse it (%s)", value, err, msg)
		}
	}
}

// TestOnpremJoinFileNames: a group's name is its join script's file name;
// one that would put the file elsewhere is refused.
func TestOnpremJoinFileNames(t *testing.T) {
	src, _ := testsrc.Example(t)
	g := src.NodeGroups["onprem-gpu"]
	for _, name := range []string{"../x", "a/b", "..", ""} {
		clone := *g
		clone.Name = name
		bad := *src
		bad.NodeGroups = map[string]*model.NodeGroup{name: &clone}
		files := layout.Files{}
		if err := onprem.JoinScripts(&bad, files); err == nil || !strings.Contains(err.Error(), "not a file name") {
			t.Errorf("group %q: %v, want it refused", name, err)
		}
		if len(files) > 0 {
			t.Errorf("group %q: rendered %v", name, files.Paths())
		}
	}
}
