package k8stest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// validationFiles are the files the GPU Operator's validator writes once
// each component works (facts.md).
var validationFiles = []string{"driver-ready", "toolkit-ready", "cuda-ready", "plugin-ready"}

// Exit codes of one round of the remover (its constant ONCE=1).
const (
	exitDone    = 0 // removed, or no startup taint
	exitWaiting = 3 // validation files or GPUs missing
	exitRetry   = 4 // API error or conflict
)

// broadGroup is a group that testApply grants every verb on nodes and
// nodes/status. An impersonated remover ServiceAccount in it shows that
// the policy holds even where RBAC would allow more.
const broadGroup = "nodegen-test:broadened"

// twinName is a ServiceAccount bound to the remover's ClusterRole but not
// covered by the policy.
const twinName = "nodegen-test-twin"

// testApply applies the test source's taint remover over the committed
// one (server-side apply, as a user re-applying after adding a group),
// reads back the script and the DaemonSets the tests run, creates the
// twin, grants broadGroup its rights, and waits until the server enforces the new
// policy (the API server loads policies asynchronously).
func (e *env) testApply(t *testing.T) {
	e.admin(t, string(e.files[layout.TaintRemoverPath]),
		"apply", "--server-side", "--force-conflicts", "--field-manager=nodegen-test", "-f", "-")

	var cm corev1.ConfigMap
	if err := json.Unmarshal([]byte(e.admin(t, "", "get", "configmap", model.TaintRemover.Name(),
		"-n", model.WorkloadNamespace, "-o", "json")), &cm); err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != 1 || cm.Data["taint-remover.sh"] != string(shippedScript(t, "taint-remover.sh")) {
		t.Fatalf("the ConfigMap on the server holds %d files, want exactly templates/taint-remover.sh", len(cm.Data))
	}
	e.script = filepath.Join(e.dir, "script", "taint-remover.sh") // outlives this subtest
	if err := os.Mkdir(filepath.Dir(e.script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.script, []byte(cm.Data["taint-remover.sh"]), 0o555); err != nil {
		t.Fatal(err)
	}

	var list appsv1.DaemonSetList
	if err := json.Unmarshal([]byte(e.admin(t, "", "get", "daemonsets", "-n", model.WorkloadNamespace,
		"-l", "app.kubernetes.io/name="+model.TaintRemover.Name(), "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	e.daemonSets = map[string]*appsv1.DaemonSet{}
	for i := range list.Items {
		ds := &list.Items[i]
		e.daemonSets[ds.Spec.Template.Spec.NodeSelector[model.VerifiedGroupLabel]] = ds
	}
	for _, g := range e.src.GPUGroups() {
		if e.daemonSets[g.Name] == nil {
			t.Fatalf("no taint-remover DaemonSet for group %s on the server", g.Name)
		}
	}
	if len(e.daemonSets) != len(e.src.GPUGroups()) {
		t.Fatalf("%d taint-remover DaemonSets on the server, want %d", len(e.daemonSets), len(e.src.GPUGroups()))
	}

	e.admin(t, "", "create", "serviceaccount", twinName, "-n", model.WorkloadNamespace)
	e.admin(t, "", "create", "clusterrolebinding", twinName, "--clusterrole="+model.TaintRemover.Name(),
		"--serviceaccount="+model.WorkloadNamespace+":"+twinName)
	e.admin(t, "", "create", "clusterrole", "nodegen-test-broadened", "--verb=*", "--resource=nodes,nodes/status")
	e.admin(t, "", "create", "clusterrolebinding", "nodegen-test-broadened", "--clusterrole=nodegen-test-broadened", "--group="+broadGroup)
	broad := e.broad(t)
	eventually(t, 30*time.Second, "RBAC for "+broadGroup, func() string {
		out, _, _ := kubectl(t, broad, "", "auth", "can-i", "delete", "nodes")
		if strings.TrimSpace(out) != "yes" {
			return "can-i delete nodes: " + out
		}
		return ""
	})

	l4 := e.group(t, "gpu-l4")
	probe := e.newNode(t, l4.Name)
	sa := e.podIdentity(t, l4.Name, probe)
	eventually(t, 30*time.Second, "the policy with both GPU groups", func() string {
		// Only the new policy knows gpu-l4's key.
		if _, _, err := kubectl(t, sa, "", "taint", "node", probe, l4.StartupTaint.Key+"-", "--dry-run=server"); err != nil {
			return err.Error()
		}
		// And the policy is enforced at all.
		_, stderr, err := kubectl(t, sa, "", "label", "node", probe, "example.com/probe=1", "--dry-run=server")
		if err == nil || !strings.Contains(stderr, policyDenied) {
			return fmt.Sprintf("labelling was not denied by the policy: %v", err)
		}
		return ""
	})
}

// broad is the remover's ServiceAccount user, impersonated in broadGroup.
func (e *env) broad(t *testing.T) *testcp.User {
	return e.cp.Impersonate(t, model.TaintRemover.User(), broadGroup, "system:authenticated")
}

// podIdentity creates the Pod the group's DaemonSet would run on node
// (its template as stored on the server, bound to the node) and returns
// the identity of a token bound to it, like the one the kubelet projects:
// the remover's ServiceAccount, with the node's name in its extra info.
func (e *env) podIdentity(t *testing.T, group, node string) *testcp.User {
	t.Helper()
	ds := e.daemonSets[group]
	pod := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ds.Name + "-" + node,
			Namespace: ds.Namespace,
			Labels:    ds.Spec.Template.Labels,
		},
		Spec: *ds.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	if _, err := e.client.CoreV1().Pods(pod.Namespace).Create(t.Context(), &pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e.cp.PodServiceAccount(t, pod.Namespace, pod.Spec.ServiceAccountName, pod.Name)
}

// removerRun says how to run the taint remover's container as a local
// process.
type removerRun struct {
	group       string
	node        string            // NODE_NAME (the downward API's spec.nodeName)
	kubeconfig  string            // the pod's credentials
	validations string            // the folder standing in for the validations hostPath
	pathPrefix  string            // a folder put first on PATH (a kubectl shim)
	env         []string          // more environment, for a kubectl shim
	constants   map[string]string // constants of the script to change (scripttest.WithConstants)
}

// removerCmd returns the group's DaemonSet container (as stored on the
// server) as a local command: its command and environment, with every
// volume mount mapped to a local folder (the ConfigMap's script, the
// validations folder, a fresh emptyDir), NODE_NAME set as the downward API
// would, kubectl on PATH and KUBECONFIG standing in for the in-cluster
// credentials. The script is the ConfigMap's, with its constant
// VALIDATIONS_DIR, a path in the container, mapped like the mounts, and
// r.constants changed.
func (e *env) removerCmd(t *testing.T, r removerRun) *exec.Cmd {
	t.Helper()
	ds := e.daemonSets[r.group]
	if ds == nil {
		t.Fatalf("no DaemonSet for group %s", r.group)
	}
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%s has %d containers, want 1", ds.Name, len(spec.Containers))
	}
	c := spec.Containers[0]
	mounts := map[string]string{} // container path → local folder
	scriptDir := t.TempDir()
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			t.Fatalf("%s: no volume %s", ds.Name, m.Name)
		}
		switch v := spec.Volumes[i]; {
		case v.ConfigMap != nil && v.ConfigMap.Name == model.TaintRemover.Name():
			mounts[m.MountPath] = scriptDir
		case v.HostPath != nil && v.HostPath.Path == model.GPUValidationsDir:
			mounts[m.MountPath] = r.validations
		case v.EmptyDir != nil:
			mounts[m.MountPath] = t.TempDir()
		default:
			t.Fatalf("%s: volume %s is of a kind this test does not map", ds.Name, v.Name)
		}
	}
	local := func(s string) string {
		for from, to := range mounts {
			if s == from || strings.HasPrefix(s, from+"/") {
				return to + strings.TrimPrefix(s, from)
			}
		}
		return s
	}
	shipped, err := os.ReadFile(e.script)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := scripttest.Constant(shipped, "VALIDATIONS_DIR")
	if err != nil {
		t.Fatal(err)
	}
	if local(dir) == dir {
		t.Fatalf("%s: the script's VALIDATIONS_DIR %s is in no volume the container mounts", ds.Name, dir)
	}
	constants := map[string]string{"VALIDATIONS_DIR": local(dir)}
	maps.Copy(constants, r.constants)
	script, err := scripttest.WithConstants(shipped, constants)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scriptDir, filepath.Base(e.script)), script, 0o555); err != nil {
		t.Fatal(err)
	}
	kubectlPath, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl not on PATH: %v", err)
	}
	path := filepath.Dir(kubectlPath) + ":/usr/local/bin:/usr/bin:/bin"
	if r.pathPrefix != "" {
		path = r.pathPrefix + ":" + path
	}
	env := []string{"PATH=" + path, "KUBECONFIG=" + r.kubeconfig}
	for _, ev := range c.Env {
		switch {
		case ev.ValueFrom != nil && ev.ValueFrom.FieldRef != nil && ev.ValueFrom.FieldRef.FieldPath == "spec.nodeName":
			env = append(env, ev.Name+"="+r.node)
		case ev.ValueFrom != nil:
			t.Fatalf("%s: env %s comes from a source this test does not map", ds.Name, ev.Name)
		default:
			env = append(env, ev.Name+"="+local(ev.Value))
		}
	}
	args := append(slices.Clone(c.Command), c.Args...)
	for i := range args {
		args[i] = local(args[i])
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(env, r.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so the test can stop bash and its sleep
	return cmd
}

// once runs one round (the script's ONCE=1) and returns its exit code
// and output.
func (e *env) once(t *testing.T, r removerRun) (code int, stdout, stderr string) {
	t.Helper()
	r.constants = withConstant(r.constants, "ONCE", "1")
	cmd := e.removerCmd(t, r)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	t.Logf("taint remover on %s: exit %d\n%s%s", r.node, code, out.String(), errb.String())
	return code, out.String(), errb.String()
}

// withConstant returns a copy of constants with name set to value.
func withConstant(constants map[string]string, name, value string) map[string]string {
	c := maps.Clone(constants)
	if c == nil {
		c = map[string]string{}
	}
	c[name] = value
	return c
}

// validationsDir returns a new folder holding the given validation files.
func validationsDir(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// refused ends kubectl's summary of a refused connection.
const refused = "was refused - did you specify the right host or port?"

// deadServer writes a kubeconfig pointing at a loopback port nothing
// listens on.
func deadServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: dead, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: dead, user: {token: not-a-token}}]
contexts: [{name: dead, context: {cluster: dead, user: dead}}]
current-context: dead
`, addr)
	path := filepath.Join(t.TempDir(), "dead.kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (e *env) testRemover(t *testing.T) {
	t.Run("Conditions", e.testRemoverConditions)
	t.Run("ConcurrentTaintChange", func(t *testing.T) { t.Parallel(); e.testRemoverConcurrent(t) })
	t.Run("KubectlWarnings", func(t *testing.T) { t.Parallel(); e.testRemoverWarnings(t) })
	t.Run("MissingNode", func(t *testing.T) {
		t.Parallel()
		sa := e.cp.ServiceAccount(t, model.WorkloadNamespace, model.TaintRemover.Name())
		node := e.src.Cluster.Name + "-gpu-t4-gone"
		code, out, stderr := e.once(t, removerRun{group: "gpu-t4", node: node, kubeconfig: sa.Kubeconfig,
			validations: validationsDir(t, validationFiles...)})
		want := fmt.Sprintf(`cannot read the node (will retry): Error from server (NotFound): nodes %q not found`, node)
		if code != exitRetry || !strings.Contains(out, want) || strings.Count(out, "\n") != 1 || stderr != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and a one-line log with %q", code, out, stderr, exitRetry, want)
		}
	})
	t.Run("UnreachableServer", func(t *testing.T) {
		t.Parallel()
		code, out, stderr := e.once(t, removerRun{group: "gpu-t4", node: "any", kubeconfig: deadServer(t),
			validations: validationsDir(t, validationFiles...)})
		// kubectl logs five client-go errors, then its summary; the
		// remover logs the summary.
		want := "cannot read the node (will retry): The connection to the server 127.0.0.1:"
		if code != exitRetry || !strings.Contains(out, want) || !strings.Contains(out, refused) ||
			strings.Count(out, "\n") != 1 || stderr != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and a one-line log of the refused connection", code, out, stderr, exitRetry)
		}
	})
	t.Run("Loop", e.testRemoverLoop)
	t.Run("AddsBack", e.testRemoverAddsBack)
}

// testRemoverAddsBack: a Node that comes back without its startup taint
// (a recreated VM re-registered onto the old Node object, or a reboot:
// the validation files are on a tmpfs) while its GPUs are not validated
// gets the taint back, exactly, when the remover starts; the remover then
// waits and removes it as on a new node; nothing else changes. It adds
// nothing when the GPUs are validated, nor later in its loop.
func (e *env) testRemoverAddsBack(t *testing.T) {
	for _, c := range []struct {
		name     string
		noTaints bool // the Node has no taints at all (spec.taints absent)
		gpus     string
		files    []string
	}{
		{name: "NoValidationFiles", gpus: "1"},
		{name: "NoGPUsYet", files: validationFiles},
		{name: "NodeWithoutAnyTaint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := e.group(t, "gpu-t4")
			key := g.StartupTaint.Key
			node := e.newNode(t, g.Name)
			if c.noTaints {
				e.admin(t, "", "patch", "node", node, "--type=json", "-p", `[{"op":"remove","path":"/spec/taints"}]`)
			} else {
				e.admin(t, "", "taint", "node", node, key+"-") // as after re-registration
			}
			if c.gpus != "" {
				e.setGPUs(t, node, c.gpus)
			}
			r := removerRun{group: g.Name, node: node, kubeconfig: e.podIdentity(t, g.Name, node).Kubeconfig,
				validations: validationsDir(t, c.files...)}
			before := e.node(t, node)
			if c.noTaints && len(before.Spec.Taints) != 0 {
				t.Fatalf("node %s still has taints %v", node, before.Spec.Taints)
			}
			code, out, stderr := e.once(t, r)
			wantLog := fmt.Sprintf("no %s taint at start but the GPUs are not validated (", key)
			added := fmt.Sprintf("added %s=%s:%s", key, g.StartupTaint.Value, g.StartupTaint.Effect)
			if code != exitWaiting || !strings.Contains(out, wantLog) || !strings.Contains(out, added) || strings.Count(out, "\n") != 1 || stderr != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and one log line with %q and %q", code, out, stderr, exitWaiting, wantLog, added)
			}
			withTaint := before.DeepCopy()
			withTaint.Spec.Taints = append(withTaint.Spec.Taints, corev1.Taint{Key: key, Value: g.StartupTaint.Value, Effect: corev1.TaintEffect(g.StartupTaint.Effect)})
			sameNode(t, "after adding the taint back", e.node(t, node), withTaint, true)

			// The GPUs come up: the same remover removes it as on a new node.
			for _, f := range validationFiles {
				if err := os.WriteFile(filepath.Join(r.validations, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			e.setGPUs(t, node, "1")
			code, out, stderr = e.once(t, r)
			if code != exitDone || !strings.Contains(out, "removed taint "+key) || stderr != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and the removal logged", code, out, stderr, exitDone)
			}
			after := e.node(t, node)
			want := before.DeepCopy()
			want.Status = after.Status // the GPUs were reported meanwhile
			sameNode(t, "after the GPUs came up", after, want, true)
		})
	}
	t.Run("ValidatedNodeWithoutTaint", func(t *testing.T) {
		t.Parallel()
		g := e.group(t, "gpu-t4")
		node := e.newNode(t, g.Name)
		e.admin(t, "", "taint", "node", node, g.StartupTaint.Key+"-")
		e.setGPUs(t, node, "1")
		r := removerRun{group: g.Name, node: node, kubeconfig: e.podIdentity(t, g.Name, node).Kubeconfig,
			validations: validationsDir(t, validationFiles...)}
		before := e.node(t, node)
		code, out, stderr := e.once(t, r)
		if code != exitDone || out != "" || stderr != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q; want a silent exit %d", code, out, stderr, exitDone)
		}
		sameNode(t, "validated node", e.node(t, node), before, false) // not even written
	})
	t.Run("NotLaterOnALiveNode", func(t *testing.T) {
		// A GPU Operator upgrade removes the validation files on a live
		// node: the running remover must not take the node out of service.
		t.Parallel()
		g := e.group(t, "gpu-t4")
		node := e.newNode(t, g.Name)
		e.admin(t, "", "taint", "node", node, g.StartupTaint.Key+"-")
		e.setGPUs(t, node, "1")
		dir := validationsDir(t, validationFiles...)
		before := e.node(t, node)
		s := e.start(t, removerRun{group: g.Name, node: node, kubeconfig: e.podIdentity(t, g.Name, node).Kubeconfig,
			validations: dir, constants: map[string]string{"IDLE_INTERVAL": "1"}})
		eventually(t, 20*time.Second, "idle logged", func() string {
			if !strings.Contains(s.out.String(), "no "+g.StartupTaint.Key+" taint on the node; idle") {
				return "output so far: " + s.out.String()
			}
			return ""
		})
		for _, f := range validationFiles {
			if err := os.Remove(filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3500 * time.Millisecond) // three more rounds
		if !s.running() || s.err.String() != "" || strings.Contains(s.out.String(), "added") {
			t.Errorf("running %v, stderr %q, output %q; want a running, idle remover that added nothing", s.running(), s.err.String(), s.out.String())
		}
		sameNode(t, "live node after its validation files vanished", e.node(t, node), before, false)
	})
}

// testRemoverConditions runs one round per case on a fresh node and checks
// that the startup taint goes only when every validation file exists and
// the node reports at least the group's GPU count, that nothing else on
// the node changes, and that a second round is a no-op.
func (e *env) testRemoverConditions(t *testing.T) {
	type tc struct {
		name        string
		group       string
		files       []string
		gpus        string // nvidia.com/gpu allocatable; "" = never reported
		secondTaint bool   // the startup key also with effect NoExecute
		code        int
		log         string // DIR: the validations folder
	}
	cases := []tc{
		{name: "NoValidationFiles", group: "gpu-t4", gpus: "1", code: exitWaiting,
			log: "waiting: DIR/driver-ready does not exist yet"},
	}
	for _, f := range validationFiles {
		rest := slices.DeleteFunc(slices.Clone(validationFiles), func(s string) bool { return s == f })
		cases = append(cases, tc{name: "Missing-" + f, group: "gpu-t4", files: rest, gpus: "1", code: exitWaiting,
			log: "waiting: DIR/" + f + " does not exist yet"})
	}
	cases = append(cases,
		tc{name: "GPUsNeverReported", group: "gpu-t4", files: validationFiles, code: exitWaiting,
			log: "waiting: nvidia.com/gpu allocatable is 0, want 1"},
		tc{name: "ZeroGPUs", group: "gpu-t4", files: validationFiles, gpus: "0", code: exitWaiting,
			log: "waiting: nvidia.com/gpu allocatable is 0, want 1"},
		tc{name: "FewerGPUsThanTheCount", group: "gpu-l4", files: validationFiles, gpus: "1", code: exitWaiting,
			log: "waiting: nvidia.com/gpu allocatable is 1, want 2"},
		tc{name: "Ready", group: "gpu-t4", files: validationFiles, gpus: "1", code: exitDone,
			log: "GPUs validated (1 allocatable); removed taint " + e.group(t, "gpu-t4").StartupTaint.Key},
		tc{name: "ReadyMoreGPUsThanTheCount", group: "gpu-l4", files: validationFiles, gpus: "3", code: exitDone,
			log: "GPUs validated (3 allocatable); removed taint " + e.group(t, "gpu-l4").StartupTaint.Key},
		tc{name: "ReadyStartupKeyTwice", group: "gpu-t4", files: validationFiles, gpus: "1", secondTaint: true, code: exitDone,
			log: "removed taint " + e.group(t, "gpu-t4").StartupTaint.Key},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := e.group(t, c.group)
			key := g.StartupTaint.Key
			node := e.newNode(t, g.Name)
			if c.gpus != "" {
				e.setGPUs(t, node, c.gpus)
			}
			if c.secondTaint {
				e.admin(t, "", "taint", "node", node, key+"=true:NoExecute")
			}
			r := removerRun{group: g.Name, node: node, kubeconfig: e.podIdentity(t, g.Name, node).Kubeconfig,
				validations: validationsDir(t, c.files...)}
			before := e.node(t, node)
			code, out, stderr := e.once(t, r)
			after := e.node(t, node)
			want := strings.ReplaceAll(c.log, "DIR", r.validations)
			if code != c.code || !strings.Contains(out, want) || stderr != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and a log with %q", code, out, stderr, c.code, want)
			}
			if c.code != exitDone {
				sameNode(t, "waiting", after, before, false) // not even written
				return
			}
			if c.secondTaint && strings.Count(out, "removed taint") != 2 {
				t.Errorf("want both %s taints removed, one per round, and logged: %q", key, out)
			}
			sameNode(t, "after the removal", after, withoutTaints(before, hasKey(key)), true)

			code, out, stderr = e.once(t, r)
			if code != exitDone || out != "" || stderr != "" {
				t.Errorf("second round: exit %d, stdout %q, stderr %q; want a silent exit %d", code, out, stderr, exitDone)
			}
			sameNode(t, "after the second round", e.node(t, node), after, false) // not even written
		})
	}
}

// shim is a kubectl wrapper for the remover's PATH: it logs each call's
// verb, and before the first patch it inserts a taint at the head of the
// node's list as the admin, so that the remover's read is stale and the
// startup taint's index has moved.
const shim = `#!/usr/bin/env bash
set -euo pipefail
echo "$1" >>"${SHIM_LOG}"
if [[ "$1" == patch && ! -e "${SHIM_DONE}" ]]; then
	: >"${SHIM_DONE}"
	"${REAL_KUBECTL}" --kubeconfig="${SHIM_ADMIN}" patch node "${NODE_NAME}" --type=json \
		-p '[{"op":"add","path":"/spec/taints/0","value":{"key":"example.com/concurrent","value":"x","effect":"NoSchedule"}}]' >/dev/null
fi
exec "${REAL_KUBECTL}" "$@"
`

// testRemoverConcurrent changes the node's taints between the remover's
// read and its write: the write must fail on its own guard (the JSON patch
// test of the resourceVersion and the key at the index), losing nothing,
// and the next round must remove only the startup taint. It runs as the
// remover's pod identity, and as a twin ServiceAccount with the same RBAC
// that the policy does not cover: the policy would also refuse the wrong
// removal an unguarded patch makes, so only the twin shows the script's
// own guard.
func (e *env) testRemoverConcurrent(t *testing.T) {
	for _, as := range []string{"RemoverPod", "TwinWithoutPolicy"} {
		t.Run(as, func(t *testing.T) {
			t.Parallel()
			e.removerConcurrent(t, as == "TwinWithoutPolicy")
		})
	}
}

func (e *env) removerConcurrent(t *testing.T, twin bool) {
	g := e.group(t, "gpu-t4")
	node := e.newNode(t, g.Name)
	e.setGPUs(t, node, "1")
	dir, real := kubectlShim(t, shim)
	var u *testcp.User
	if twin {
		u = e.cp.ServiceAccount(t, model.WorkloadNamespace, twinName)
	} else {
		u = e.podIdentity(t, g.Name, node)
	}
	log := filepath.Join(dir, "calls")
	r := removerRun{group: g.Name, node: node, kubeconfig: u.Kubeconfig,
		validations: validationsDir(t, validationFiles...), pathPrefix: dir,
		env: []string{"SHIM_LOG=" + log, "SHIM_DONE=" + filepath.Join(dir, "done"), "REAL_KUBECTL=" + real, "SHIM_ADMIN=" + e.cp.Kubeconfig}}
	before := e.node(t, node)
	concurrent := corev1.Taint{Key: "example.com/concurrent", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	changed := before.DeepCopy()
	changed.Spec.Taints = append([]corev1.Taint{concurrent}, before.Spec.Taints...)

	code, out, stderr := e.once(t, r)
	// A failed JSON patch test is an invalid request (422), not a denial.
	if code != exitRetry || !strings.Contains(out, "removing "+g.StartupTaint.Key+" failed (will read the node again): The request is invalid") ||
		strings.Count(out, "\n") != 1 || stderr != "" {
		t.Fatalf("round with a concurrent change: exit %d, stdout %q, stderr %q; want exit %d and a one-line log of the failure", code, out, stderr, exitRetry)
	}
	sameNode(t, "after the refused patch", e.node(t, node), changed, true)

	code, out, stderr = e.once(t, r)
	if code != exitDone || !strings.Contains(out, "removed taint "+g.StartupTaint.Key) || stderr != "" {
		t.Fatalf("next round: exit %d, stdout %q, stderr %q; want exit %d and the removal logged", code, out, stderr, exitDone)
	}
	sameNode(t, "after the next round", e.node(t, node), withoutTaints(changed, hasKey(g.StartupTaint.Key)), true)

	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(calls)), []string{"get", "patch", "get", "patch", "get"}; !slices.Equal(got, want) {
		t.Errorf("kubectl calls %v, want %v", got, want)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// started is the remover running in its loop (ONCE unset).
type started struct {
	cmd      *exec.Cmd
	out, err *syncBuffer
	done     chan struct{}
	stopOnce sync.Once
}

// start runs the remover in its loop with the script's INTERVAL=1; a
// cleanup stops it.
func (e *env) start(t *testing.T, r removerRun) *started {
	t.Helper()
	r.constants = withConstant(r.constants, "INTERVAL", "1")
	s := &started{cmd: e.removerCmd(t, r), out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.err
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *started) running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// stop kills the remover's process group (bash and its sleep) by its id.
func (s *started) stop(t *testing.T) {
	s.stopOnce.Do(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		t.Logf("taint remover loop output:\n%s%s", s.out.String(), s.err.String())
	})
}

func (e *env) testRemoverLoop(t *testing.T) {
	t.Run("WaitsThenRemovesThenIdles", func(t *testing.T) {
		t.Parallel()
		g := e.group(t, "gpu-t4")
		node := e.newNode(t, g.Name)
		before := e.node(t, node)
		dir := validationsDir(t)
		s := e.start(t, removerRun{group: g.Name, node: node, kubeconfig: e.podIdentity(t, g.Name, node).Kubeconfig, validations: dir})
		eventually(t, 20*time.Second, "waiting logged", func() string {
			if !strings.Contains(s.out.String(), "waiting: "+dir+"/driver-ready does not exist yet") {
				return "output so far: " + s.out.String()
			}
			return ""
		})
		for _, f := range validationFiles {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		e.setGPUs(t, node, "1")
		eventually(t, 30*time.Second, "removal and idle logged", func() string {
			out := s.out.String()
			if !strings.Contains(out, "removed taint "+g.StartupTaint.Key) || !strings.Contains(out, "no "+g.StartupTaint.Key+" taint on the node; idle") {
				return "output so far: " + out
			}
			return ""
		})
		after := e.node(t, node)
		want := withoutTaints(before, hasKey(g.StartupTaint.Key))
		want.Status = after.Status // the GPUs were reported meanwhile
		sameNode(t, "after the loop removed the taint", after, want, true)
		time.Sleep(1500 * time.Millisecond) // more than INTERVAL: it must idle, not exit
		if !s.running() || s.err.String() != "" {
			t.Errorf("the remover is not idling: running %v, stderr %q", s.running(), s.err.String())
		}
	})
	for _, c := range []struct {
		name string
		node string
		kc   func(t *testing.T) string
		want string
	}{
		{"RetriesMissingNode", e.src.Cluster.Name + "-gpu-t4-never", func(t *testing.T) string {
			return e.cp.ServiceAccount(t, model.WorkloadNamespace, model.TaintRemover.Name()).Kubeconfig
		}, "(NotFound)"},
		{"RetriesUnreachableServer", "any", deadServer, refused},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := e.start(t, removerRun{group: "gpu-t4", node: c.node, kubeconfig: c.kc(t), validations: validationsDir(t, validationFiles...)})
			// With INTERVAL=1 the retries come after 2 s, then 4 s, ...
			eventually(t, 20*time.Second, "two logged retries", func() string {
				out := s.out.String()
				n := strings.Count(out, "cannot read the node (will retry): ")
				if n < 2 || strings.Count(out, c.want) != n || strings.Count(out, "\n") != n {
					return "output so far: " + out
				}
				return ""
			})
			if !s.running() || s.err.String() != "" {
				t.Errorf("the remover did not keep running: running %v, stderr %q", s.running(), s.err.String())
			}
		})
	}
}

// warnShim wraps the real kubectl and prints a warning to stderr before
// every call, as kubectl does for a server's Warning headers.
const warnShim = `#!/usr/bin/env bash
echo 'Warning: example.com/v1 is deprecated' >&2
exec "${REAL_KUBECTL}" "$@"
`

// testRemoverWarnings: kubectl's warnings on stderr are not read as the
// node's resourceVersion or taints; the remover still removes the taint.
func (e *env) testRemoverWarnings(t *testing.T) {
	g := e.group(t, "gpu-t4")
	node := e.newNode(t, g.Name)
	e.setGPUs(t, node, "1")
	dir, real := kubectlShim(t, warnShim)
	r := removerRun{group: g.Name, node: node, kubeconfig: e.podIdentity(t, g.Name, node).Kubeconfig,
		validations: validationsDir(t, validationFiles...), pathPrefix: dir, env: []string{"REAL_KUBECTL=" + real}}
	before := e.node(t, node)
	code, out, _ := e.once(t, r)
	if code != exitDone || !strings.Contains(out, "removed taint "+g.StartupTaint.Key) {
		t.Fatalf("exit %d, stdout %q; want exit %d and the taint removed", code, out, exitDone)
	}
	sameNode(t, "after the removal", e.node(t, node), withoutTaints(before, hasKey(g.StartupTaint.Key)), true)
}

// kubectlShim writes script as kubectl into a new folder for the front of
// the remover's PATH, and returns the folder and the real kubectl it wraps.
func kubectlShim(t *testing.T, script string) (dir, real string) {
	t.Helper()
	real, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip(err)
	}
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, real
}
