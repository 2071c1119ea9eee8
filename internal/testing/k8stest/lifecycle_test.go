package k8stest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/scriptenv"
	"github.com/nodegen/nodegen/internal/testing/testcp"
	"github.com/nodegen/nodegen/templates"
)

// gcPolicyDenied starts the error of a request the collector's policy denies.
var gcPolicyDenied = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ",
	model.NodeCollector.Name(), model.NodeCollector.Name())

// fakeGCE is a metadata server and Compute API (gceNamespace serves it at
// their production addresses to the script under test). The metadata
// server hands out token to requests with Metadata-Flavor: Google; the
// Compute API answers GET instance with the status set for the instance's
// name (200 if none), only with that token, and records what was asked.
// An instance given a MIG (vm) is that MIG's, in the status given, with
// the created-by metadata item a MIG writes; instanceGroupManagers
// deleteInstances records the call and deletes the named instances of that
// MIG (GET answers 404 for them from then on), as the Compute API v1 does
// (instanceGroupManagers.deleteInstances: the MIG's target size goes down,
// nothing is recreated).
type fakeGCE struct {
	handler http.Handler
	project string
	token   string
	// tokenDown makes the metadata server answer 503 for the token.
	tokenDown bool

	mu       sync.Mutex
	status   map[string]int    // instance name → status
	body404  map[string]string // instance name → a 404 body other than the usual one
	before   map[string]func() // run before answering for the instance
	asked    []string          // instance names asked for
	problems []string          // requests the fake refused
	mig      map[string]string // instance name → the MIG that made it (vm)
	vmStatus map[string]string // instance name → its status, with a MIG
	deleted  []string          // deleteInstances: "MIG zones/ZONE/instances/NAME"
}

func newFakeGCE(t *testing.T, project string) *fakeGCE {
	f := &fakeGCE{project: project, token: "ya29.test-token-" + fmt.Sprint(time.Now().UnixNano()),
		status: map[string]int{}, body404: map[string]string{}, before: map[string]func(){},
		mig: map[string]string{}, vmStatus: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /computeMetadata/v1/instance/service-accounts/default/token", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			f.problem("token request without Metadata-Flavor: Google")
			http.Error(w, "Missing Metadata-Flavor:Google header.", http.StatusForbidden)
			return
		}
		if f.tokenDown {
			http.Error(w, "metadata server unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"expires_in":3599,"token_type":"Bearer"}`, f.token)
	})
	mux.HandleFunc("GET /compute/v1/projects/{project}/zones/{zone}/instances/{name}", func(w http.ResponseWriter, r *http.Request) {
		name, zone, project := r.PathValue("name"), r.PathValue("zone"), r.PathValue("project")
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			f.problem("instance request for " + name + " without the token")
			http.Error(w, `{"error":{"code":401,"message":"Request is missing required authentication credential."}}`, http.StatusUnauthorized)
			return
		}
		f.mu.Lock()
		f.asked = append(f.asked, name)
		status, ok := f.status[name]
		if !ok {
			status = http.StatusOK
		}
		body404, hook := f.body404[name], f.before[name]
		mig, vmStatus := f.mig[name], f.vmStatus[name]
		f.mu.Unlock()
		if project != f.project {
			f.problem("instance request in project " + project)
		}
		if hook != nil {
			hook()
		}
		w.Header().Set("Content-Type", "application/json")
		resource := fmt.Sprintf("projects/%s/zones/%s/instances/%s", project, zone, name)
		switch status {
		case http.StatusOK:
			if mig == "" {
				fmt.Fprintf(w, `{"kind":"compute#instance","name":%q,"status":"TERMINATED"}`, name)
				break
			}
			// The fields in the Compute API's order; created-by names the
			// project by number, as a MIG writes it.
			fmt.Fprintf(w, `{"kind":"compute#instance","id":"4711","creationTimestamp":"2026-12-01T03:04:05.678-08:00","name":%q,"status":%q,`+
				`"zone":"https://www.googleapis.com/compute/v1/projects/%s/zones/%s","metadata":{"kind":"compute#metadata","items":[`+
				`{"key":"instance-template","value":"projects/%s/global/instanceTemplates/t"},{"key":"created-by","value":"projects/%s/zones/%s/instanceGroupManagers/%s"}]},`+
				`"networkInterfaces":[{"name":"nic0","networkIP":"10.128.0.9"}]}`, name, vmStatus, project, zone, projectNumber, projectNumber, zone, mig)
		case http.StatusNotFound:
			if body404 == "" {
				body404 = fmt.Sprintf(`{"error":{"code":404,"message":"The resource '%s' was not found","errors":[{"message":"The resource '%s' was not found","domain":"global","reason":"notFound"}]}}`, resource, resource)
			}
			w.WriteHeader(status)
			fmt.Fprint(w, body404)
		default:
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"code":%d,"message":"fake error %d for %s"}}`, status, status, resource)
		}
	})
	mux.HandleFunc("POST /compute/v1/projects/{project}/zones/{zone}/instanceGroupManagers/{mig}/deleteInstances", func(w http.ResponseWriter, r *http.Request) {
		zone, mig := r.PathValue("zone"), r.PathValue("mig")
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			f.problem("deleteInstances of " + mig + " without the token")
			http.Error(w, `{"error":{"code":401,"message":"Request is missing required authentication credential."}}`, http.StatusUnauthorized)
			return
		}
		if r.PathValue("project") != f.project || r.Header.Get("Content-Type") != "application/json" {
			f.problem("deleteInstances in project " + r.PathValue("project") + " with Content-Type " + r.Header.Get("Content-Type"))
		}
		var req struct {
			Instances []string `json:"instances"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || len(req.Instances) == 0 {
			f.problem(fmt.Sprintf("deleteInstances of %s: body %v", mig, err))
			http.Error(w, `{"error":{"code":400,"message":"Invalid JSON payload received."}}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, i := range req.Instances {
			f.deleted = append(f.deleted, mig+" "+i)
			name, ok := strings.CutPrefix(i, "zones/"+zone+"/instances/")
			if !ok || f.mig[name] != mig {
				// The real API refuses an instance that is not the MIG's.
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"code":400,"message":"The instance '%s' is not a member of the instance group"}}`, i)
				return
			}
			f.status[name] = http.StatusNotFound
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"compute#operation","name":"operation-1","operationType":"compute.instanceGroupManagers.deleteInstances","status":"DONE",`+
			`"targetLink":"https://www.googleapis.com/compute/v1/projects/%s/zones/%s/instanceGroupManagers/%s"}`, f.project, zone, mig)
	})
	f.handler = mux
	return f
}

// vm makes instance name the MIG's, RUNNING or in status.
func (f *fakeGCE) vm(name, mig, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mig[name], f.vmStatus[name], f.status[name] = mig, status, http.StatusOK
}

func (f *fakeGCE) deletedInstances() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deleted)
}

// gceNamespace returns a namespace (scriptenv) in which a script reaches
// the Google endpoints the node CSR approver and the node collector dial
// in production, the metadata server at 169.254.169.254 on port 80 and the
// Compute API at compute.googleapis.com on 443 (its certificate trusted
// through the system CA bundle), both served by h, and the API server at
// apiURL, forwarded from the test's network.
func gceNamespace(t *testing.T, h http.Handler, apiURL string) *scriptenv.Env {
	t.Helper()
	ns := scriptenv.New(t)
	ns.Serve("169.254.169.254", 80, servedUnder("/computeMetadata/v1/", h))
	ns.ServeTLS("compute.googleapis.com", 443, servedUnder("/compute/v1/", h))
	api, err := url.Parse(apiURL)
	if err != nil {
		t.Fatal(err)
	}
	ns.Forward(api.Host)
	return ns
}

func (f *fakeGCE) problem(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems = append(f.problems, s)
}

func (f *fakeGCE) set(name string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[name] = status
}

func (f *fakeGCE) askedFor() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// testLifecycleApply applies the test source's collector over the
// committed one and waits until its policy knows gpu-l4.
func (e *env) testLifecycleApply(t *testing.T) {
	e.admin(t, string(e.files[layout.NodeLifecyclePath]),
		"apply", "--server-side", "--force-conflicts", "--field-manager=nodegen-test", "-f", "-")
	var cm corev1.ConfigMap
	if err := json.Unmarshal([]byte(e.admin(t, "", "get", "configmap", model.NodeCollector.Name(),
		"-n", model.WorkloadNamespace, "-o", "json")), &cm); err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != 1 || cm.Data["node-lifecycle.sh"] != string(shippedScript(t, "node-lifecycle.sh")) {
		t.Fatalf("the ConfigMap on the server holds %d files, want exactly templates/node-lifecycle.sh", len(cm.Data))
	}
	e.gcScript = filepath.Join(e.dir, "gc-script", "node-lifecycle.sh")
	if err := os.Mkdir(filepath.Dir(e.gcScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.gcScript, []byte(cm.Data["node-lifecycle.sh"]), 0o555); err != nil {
		t.Fatal(err)
	}
	e.cronJob = &batchv1.CronJob{}
	if err := json.Unmarshal([]byte(e.admin(t, "", "get", "cronjob", model.NodeCollector.Name(),
		"-n", model.WorkloadNamespace, "-o", "json")), e.cronJob); err != nil {
		t.Fatal(err)
	}
	e.gcNode = e.newNode(t, e.src.Cluster.Autoscaler.NodeGroup)
	gc := e.gcIdentity(t, e.gcNode)
	probe := e.newNode(t, "gpu-l4")
	e.setReady(t, probe, corev1.ConditionUnknown, time.Hour)
	eventually(t, 30*time.Second, "the collector's policy with gpu-l4", func() string {
		if _, _, err := kubectl(t, gc, "", "delete", "node", probe, "--dry-run=server"); err != nil {
			return err.Error()
		}
		_, stderr, err := kubectl(t, gc, "", "delete", "node", probe+"-x", "--dry-run=server")
		if err == nil || !strings.Contains(stderr, "NotFound") {
			return fmt.Sprintf("deleting a missing node: %v", err)
		}
		return ""
	})
}

// gcIdentity creates the Pod the CronJob would run on node (its template
// as stored on the server) and returns the identity of a token bound to
// it: the collector's ServiceAccount with the node's name in its extra.
func (e *env) gcIdentity(t *testing.T, node string) *testcp.User {
	t.Helper()
	tmpl := e.cronJob.Spec.JobTemplate.Spec.Template
	pod := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%s-%d", model.NodeCollector.Name(), node, e.seq.Add(1)),
			Namespace: model.WorkloadNamespace,
			Labels:    tmpl.Labels,
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	if _, err := e.client.CoreV1().Pods(pod.Namespace).Create(t.Context(), &pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e.cp.PodServiceAccount(t, pod.Namespace, pod.Spec.ServiceAccountName, pod.Name)
}

// runGC runs the CronJob's container once as a local process: its command
// and environment, the ConfigMap's script, a fresh emptyDir, kubectl with
// the pod's credentials, and the fake answering at the production
// endpoints the script dials (gceNamespace).
func (e *env) runGC(t *testing.T, f *fakeGCE, u *testcp.User) (code int, stdout, stderr string) {
	t.Helper()
	return e.runCronJob(t, e.cronJob, f, u)
}

// runCronJob runs CronJob cj's container (the collector's, with its
// script) once as runGC does.
func (e *env) runCronJob(t *testing.T, cj *batchv1.CronJob, f *fakeGCE, u *testcp.User) (code int, stdout, stderr string) {
	t.Helper()
	spec := cj.Spec.JobTemplate.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("the CronJob has %d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			t.Fatalf("no volume %s", m.Name)
		}
		switch v := spec.Volumes[i]; {
		case v.ConfigMap != nil && v.ConfigMap.Name == model.NodeCollector.Name():
			mounts[m.MountPath] = filepath.Dir(e.gcScript)
		case v.EmptyDir != nil:
			mounts[m.MountPath] = t.TempDir()
		default:
			t.Fatalf("volume %s is of a kind this test does not map", v.Name)
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
	kubectlPath, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl not on PATH: %v", err)
	}
	env := []string{"PATH=" + filepath.Dir(kubectlPath) + ":/usr/local/bin:/usr/bin:/bin", "KUBECONFIG=" + u.Kubeconfig}
	for _, ev := range c.Env {
		if ev.ValueFrom != nil {
			t.Fatalf("env %s comes from a source this test does not map", ev.Name)
		}
		env = append(env, ev.Name+"="+local(ev.Value))
	}
	args := append(slices.Clone(c.Command), c.Args...)
	for i := range args {
		args[i] = local(args[i])
	}
	cmd := gceNamespace(t, f.handler, e.cp.URL).Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	t.Logf("node-lifecycle: exit %d\n%s%s", code, out.String(), errb.String())
	return code, out.String(), errb.String()
}

// rawNode creates a Node as the admin with the given labels and
// providerID (none if empty) and returns its name.
func (e *env) rawNode(t *testing.T, prefix string, labels map[string]string, providerID func(name string) string) string {
	t.Helper()
	name := fmt.Sprintf("%s-n%03d", prefix, e.seq.Add(1))
	n := corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	for k, v := range labels {
		n.Labels[k] = v
	}
	if providerID != nil {
		n.Spec.ProviderID = providerID(name)
	}
	if _, err := e.client.CoreV1().Nodes().Create(t.Context(), &n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// setReady sets the node's Ready condition to status, last changed ago.
func (e *env) setReady(t *testing.T, node string, status corev1.ConditionStatus, ago time.Duration) {
	t.Helper()
	at := time.Now().Add(-ago).UTC().Format(time.RFC3339)
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":%q,"reason":"Test","message":"set by the test","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`,
		status, at, at)
	e.patchStatus(t, node, patch)
}

// exists reports whether the Node exists (as the admin).
func (e *env) exists(t *testing.T, node string) bool {
	t.Helper()
	_, err := e.client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func (e *env) testLifecycle(t *testing.T) {
	t.Run("Collector", e.testCollector)
	t.Run("Policy", e.testCollectorPolicy)
	t.Run("StuckGPUNode", e.testStuckGPUNode)
}

// testCollector builds one Node per case, runs one pass of the collector
// against the real server and a fake Compute API, and checks each Node:
// only the NotReady-past-grace Nodes of nodegen's cloud groups in the
// project whose VM the Compute API says is gone are deleted; nothing else
// is written, and the Compute API is asked only about the candidates.
func (e *env) testCollector(t *testing.T) {
	project := e.src.Cluster.GCP.Project
	f := newFakeGCE(t, project)
	zone := e.group(t, "gpu-t4").Zones[0]
	gce := func(proj string) func(string) string {
		return func(name string) string { return "gce://" + proj + "/" + zone + "/" + name }
	}
	const long, short = 2 * time.Hour, 3 * time.Minute
	type gcCase struct {
		name    string
		node    func() string // creates the Node
		ready   corev1.ConditionStatus
		ago     time.Duration // Ready last changed; 0: no Ready condition
		vm      int           // the Compute API's answer
		body404 string        // a 404 body that does not name the instance
		changed bool          // the Node changes while the Compute API is asked
		stuck   bool          // reported stuck initialising: annotated, one Event
		deleted bool
		asked   bool // the Compute API is asked about it
		log     string
	}
	group := func(g string) func() string { return func() string { return e.newNode(t, g) } }
	cases := []gcCase{
		{name: "GoneNotReadyPastGrace", node: group("gpu-t4"), ready: corev1.ConditionUnknown, ago: long, vm: 404, deleted: true, asked: true,
			log: "VM ZONE/NODE does not exist; deleted the Node"},
		{name: "GoneFalsePastGraceCPUGroup", node: group("cpu-burst"), ready: corev1.ConditionFalse, ago: long, vm: 404, deleted: true, asked: true,
			log: "VM ZONE/NODE does not exist; deleted the Node"},
		{name: "GoneJustNotReady", node: group("gpu-t4"), ready: corev1.ConditionUnknown, ago: short, vm: 404, deleted: true, asked: true,
			log: "VM ZONE/NODE does not exist; deleted the Node"},
		{name: "GoneNoReadyConditionNewNode", node: group("gpu-l4"), vm: 404,
			log: "Ready is missing since"},
		{name: "VMExists", node: group("gpu-t4"), ready: corev1.ConditionUnknown, ago: long, vm: 200, asked: true,
			log: "past the grace period of 1200s, but VM ZONE/NODE exists; kept (stuck"},
		{name: "VMExistsWithinGrace", node: group("cpu-burst"), ready: corev1.ConditionFalse, ago: short, vm: 200, asked: true,
			log: "since TIME, but VM ZONE/NODE exists; kept"},
		// Ready: never deleted. Its startup taint is still on it two hours
		// after it became Ready, so it is logged as stuck initialising,
		// and only logged (the test source leaves removeStuckGPUNodes off).
		{name: "Ready", node: group("gpu-t4"), ready: corev1.ConditionTrue, ago: long, vm: 404, stuck: true,
			log: "stuck initialising: startup taint " + e.group(t, "gpu-t4").StartupTaint.Key + " still on it, Ready since TIME, past the init budget of " + startupSeconds(e.src) + "s to be ready, nvidia.com/gpu allocatable 0 of 1; kept (removing stuck nodes is off)"},
		{name: "ComputeError500", node: group("gpu-t4"), ready: corev1.ConditionUnknown, ago: long, vm: 500, asked: true,
			log: "the Compute API answered 500 for VM ZONE/NODE"},
		{name: "ComputeForbidden403", node: group("cpu-burst"), ready: corev1.ConditionUnknown, ago: long, vm: 403, asked: true,
			log: "the Compute API answered 403 for VM ZONE/NODE"},
		{name: "NotFoundNamingAnotherResource", node: group("gpu-t4"), ready: corev1.ConditionUnknown, ago: long, vm: 404, asked: true,
			body404: fmt.Sprintf(`{"error":{"code":404,"message":"The resource 'projects/%s' was not found"}}`, project),
			log:     "the Compute API answered 404 without naming instance projects/" + project + "/zones/ZONE/instances/NODE; kept"},
		{name: "ChangedWhileAsked", node: group("gpu-t4"), ready: corev1.ConditionUnknown, ago: long, vm: 404, changed: true, asked: true,
			log: "node NODE: deleting failed (kept; the next run looks again)"},
		{name: "OnPremWithoutProviderID", node: func() string {
			return e.rawNode(t, "onprem-a100", map[string]string{model.VerifiedGroupLabel: "onprem-gpu"}, nil)
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		{name: "OnPremNoLabel", node: func() string { return e.rawNode(t, "onprem-x", nil, nil) }, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		{name: "OtherProject", node: func() string {
			return e.rawNode(t, e.src.Cluster.Name+"-gpu-t4", map[string]string{model.VerifiedGroupLabel: "gpu-t4"}, gce("other-project-1"))
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		{name: "ProjectPrefixOnly", node: func() string {
			return e.rawNode(t, e.src.Cluster.Name+"-gpu-t4", map[string]string{model.VerifiedGroupLabel: "gpu-t4"}, gce(project+"x"))
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		{name: "NonGCEProviderID", node: func() string {
			return e.rawNode(t, e.src.Cluster.Name+"-gpu-t4", map[string]string{model.VerifiedGroupLabel: "gpu-t4"},
				func(n string) string { return "kwok://" + n })
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		{name: "ProviderIDOfAnotherName", node: func() string {
			return e.rawNode(t, e.src.Cluster.Name+"-gpu-t4", map[string]string{model.VerifiedGroupLabel: "gpu-t4"},
				func(string) string { return gce(project)(e.src.Cluster.Name + "-gpu-t4-elsewhere") })
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		{name: "CloudVMWithoutGroupLabel", node: func() string { return e.rawNode(t, "rogue-vm", nil, gce(project)) },
			ready: corev1.ConditionUnknown, ago: long, vm: 404},
		// Only the group label a kubelet may set on itself: the approver has
		// not checked the VM, so the collector does not consider the Node.
		{name: "KubeletGroupLabelOnly", node: func() string {
			return e.rawNode(t, e.src.Cluster.Name+"-gpu-t4", map[string]string{model.GroupLabel: "gpu-t4"}, gce(project))
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		{name: "RemovedGroup", node: func() string {
			return e.rawNode(t, e.src.Cluster.Name+"-l4-old", map[string]string{model.VerifiedGroupLabel: "l4-old"}, gce(project))
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		{name: "OnPremUnmanagedProviderID", node: func() string {
			return e.rawNode(t, "onprem-c", map[string]string{model.VerifiedGroupLabel: "onprem-gpu"}, model.UnmanagedProviderID)
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		{name: "ControlPlaneUnmanagedProviderID", node: func() string {
			return e.rawNode(t, "cp", map[string]string{"node-role.kubernetes.io/control-plane": ""}, model.UnmanagedProviderID)
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		// Labelled as a cloud group's and named like its VMs, but with the
		// on-prem providerID: not in the project, never considered.
		{name: "CloudLabelUnmanagedProviderID", node: func() string {
			return e.rawNode(t, e.src.Cluster.Name+"-gpu-t4", map[string]string{model.VerifiedGroupLabel: "gpu-t4"}, model.UnmanagedProviderID)
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
		{name: "OnPremGroupLabelWithGCEProviderID", node: func() string {
			return e.rawNode(t, "onprem-b", map[string]string{model.VerifiedGroupLabel: "onprem-gpu"}, gce(project))
		}, ready: corev1.ConditionUnknown, ago: long, vm: 404},
	}
	type built struct {
		gcCase
		node   string
		before *corev1.Node
	}
	var nodes []built
	for _, c := range cases {
		n := c.node()
		if c.ago != 0 {
			e.setReady(t, n, c.ready, c.ago)
		}
		f.set(n, c.vm)
		if c.body404 != "" {
			f.body404[n] = c.body404
		}
		if c.changed {
			f.before[n] = func() {
				// As a kubelet re-registering would: the Node changes
				// between the list and the delete.
				if _, _, err := kubectl(t, e.cp.Admin(), "", "label", "node", n, "example.com/reregistered=yes"); err != nil {
					f.problem("changing " + n + ": " + err.Error())
				}
			}
		}
		nodes = append(nodes, built{gcCase: c, node: n, before: e.node(t, n)})
	}

	gc := e.gcIdentity(t, e.gcNode)
	code, out, stderr := e.runGC(t, f, gc)
	if code != 1 || stderr != "" {
		t.Errorf("exit %d, stderr %q; want exit 1 (the Compute API errors and the failed delete) and no stderr", code, stderr)
	}
	if len(f.problems) != 0 {
		t.Errorf("the fake GCE refused requests: %v", f.problems)
	}
	asked := f.askedFor()
	for _, n := range nodes {
		t.Run(n.name, func(t *testing.T) {
			var at string
			for _, c := range n.before.Status.Conditions {
				if c.Type == corev1.NodeReady {
					at = c.LastTransitionTime.UTC().Format(time.RFC3339)
				}
			}
			wantLog := strings.NewReplacer("NODE", n.node, "ZONE", zone, "TIME", at).Replace(n.log)
			if n.log != "" && !strings.Contains(out, "node "+n.node+": ") {
				t.Errorf("no log line for node %s", n.node)
			}
			if n.log != "" && !strings.Contains(out, wantLog) {
				t.Errorf("log lacks %q", wantLog)
			}
			if n.log == "" && strings.Contains(out, n.node) {
				t.Errorf("the collector logged about node %s, which it must not consider", n.node)
			}
			if got := slices.Contains(asked, n.node); got != n.asked {
				t.Errorf("Compute API asked about %s: %v, want %v", n.node, got, n.asked)
			}
			if e.exists(t, n.node) == n.deleted {
				t.Fatalf("node %s exists: %v, want %v", n.node, !n.deleted, !n.deleted)
			}
			if n.deleted {
				return
			}
			want := n.before
			if n.changed {
				want = n.before.DeepCopy()
				want.Labels["example.com/reregistered"] = "yes"
				sameNode(t, "kept after a failed precondition", e.node(t, n.node), want, true)
				return
			}
			e.checkStuckReport(t, n.node, want, n.stuck)
			if n.stuck {
				return
			}
			sameNode(t, "kept", e.node(t, n.node), want, false) // not even written
		})
	}
	if strings.Count(out, "deleted the Node") != 3 {
		t.Errorf("want exactly 3 deletions logged:\n%s", out)
	}
	// The token never reaches the log.
	if strings.Contains(out, f.token) {
		t.Error("the access token is in the log")
	}

	t.Run("GoneWithinTwoMinutes", func(t *testing.T) {
		// A NotReady Node whose VM exists is kept; once the Compute API
		// answers 404 for it, the next pass deletes it. The next pass
		// starts at most one period of the CronJob's schedule later, as
		// the CronJob controller reads it (robfig/cron, which
		// kubernetes/kubernetes pkg/controller/cronjob uses), or, with
		// concurrencyPolicy Forbid, when a pass still running ends (at
		// most activeDeadlineSeconds).
		cj := e.cronJob.Spec
		if cj.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.JobTemplate.Spec.ActiveDeadlineSeconds == nil {
			t.Fatalf("the CronJob has concurrencyPolicy %q and activeDeadlineSeconds %v", cj.ConcurrencyPolicy, cj.JobTemplate.Spec.ActiveDeadlineSeconds)
		}
		sched, err := cron.ParseStandard(cj.Schedule)
		if err != nil {
			t.Fatalf("schedule %q: %v", cj.Schedule, err)
		}
		var period time.Duration
		for at, i := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 0; i < 24*60; i++ {
			next := sched.Next(at)
			period = max(period, next.Sub(at))
			at = next
		}
		active := time.Duration(*cj.JobTemplate.Spec.ActiveDeadlineSeconds) * time.Second

		live := newFakeGCE(t, project)
		node := e.newNode(t, "gpu-t4")
		e.setReady(t, node, corev1.ConditionUnknown, time.Minute)
		live.set(node, 200)
		if _, out, _ := e.runGC(t, live, gc); !e.exists(t, node) || !strings.Contains(out, "node "+node+": ") {
			t.Fatalf("node %s whose VM exists: exists %v\n%s", node, e.exists(t, node), out)
		}
		live.set(node, 404)
		start := time.Now()
		code, out, _ := e.runGC(t, live, gc)
		pass := time.Since(start)
		if code != 0 || e.exists(t, node) || !strings.Contains(out, "node "+node+": ") || !strings.Contains(out, "does not exist; deleted the Node") {
			t.Fatalf("the pass after the 404: exit %d, node exists %v\n%s", code, e.exists(t, node), out)
		}
		worst := period + active
		t.Logf("deleted by the next pass (%v); the next pass starts within %v of the 404, or after a running pass (at most %v): at most %v after the 404",
			pass.Round(time.Millisecond), period, active, worst)
		if pass > active {
			t.Errorf("the pass took %v, longer than its activeDeadlineSeconds %v", pass, active)
		}
		if period+pass > 2*time.Minute || worst > 2*time.Minute {
			t.Errorf("a NotReady Node whose VM is gone is deleted up to %v (schedule period %v + the pass, %v + a running pass of at most %v) after the 404, want at most 2m",
				max(period+pass, worst), period, pass, active)
		}
	})

	t.Run("NoAccessToken", func(t *testing.T) {
		// Without a token nothing is looked up and nothing is deleted.
		down := newFakeGCE(t, project)
		down.tokenDown = true
		node := e.newNode(t, "gpu-t4")
		e.setReady(t, node, corev1.ConditionUnknown, long)
		down.set(node, 404)
		before := e.node(t, node)
		code, out, stderr := e.runGC(t, down, gc)
		want := "cannot get an access token from the metadata server: "
		if code != 1 || !strings.Contains(out, want) || stderr != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and a log with %q", code, out, stderr, want)
		}
		if len(down.askedFor()) != 0 {
			t.Errorf("the Compute API was asked about %v without a token", down.askedFor())
		}
		sameNode(t, "without a token", e.node(t, node), before, false)
	})
}

func (e *env) testCollectorPolicy(t *testing.T) {
	project := e.src.Cluster.GCP.Project
	zone := e.group(t, "gpu-t4").Zones[0]
	gce := func(proj string) func(string) string {
		return func(name string) string { return "gce://" + proj + "/" + zone + "/" + name }
	}
	gc := e.gcIdentity(t, e.gcNode)
	plain := e.cp.ServiceAccount(t, model.WorkloadNamespace, model.NodeCollector.Name())
	broad := e.cp.Impersonate(t, model.NodeCollector.User(), broadGroup, "system:authenticated")
	groupMsg := func(g string) string {
		return "node NODE is in no nodegen cloud node group (" + model.VerifiedGroupLabel + "=" + g + ")"
	}
	idMsg := func(pid string) string {
		return "node NODE has providerID " + pid + ", not gce://" + project + "/<zone>/NODE"
	}
	noClaim := "the node garbage collector may write only with a pod-bound token that names its node (" + nodeNameExtra + "); this request has none"
	onlyAnnotation := "the node garbage collector may change only the annotation " + model.StuckAnnotation + " of node NODE, to a time or removed"
	annotated := func(value string) func(t *testing.T, node string) {
		return func(t *testing.T, node string) {
			if got, ok := e.node(t, node).Annotations[model.StuckAnnotation]; got != value || ok != (value != "") {
				t.Errorf("annotation %s is %q (set %v), want %q", model.StuckAnnotation, got, ok, value)
			}
		}
	}
	event := func(ns, reason, kind, name string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"%s.test","namespace":%q},"involvedObject":{"apiVersion":"v1","kind":%q,"name":%q},"reason":%q,"message":"m","type":"Warning","source":{"component":"c"}}`,
			name, ns, kind, name, reason)
	}
	eventCreated := func(t *testing.T, node string) {
		if _, err := e.client.CoreV1().Events("default").Get(context.Background(), node+".test", metav1.GetOptions{}); err != nil {
			t.Error(err)
		}
	}
	eventDenied := "the node garbage collector may create only Warning events with the reason " + model.StuckReason + " in the default namespace about a node of the cluster's MIGs"
	cases := []struct {
		name    string
		node    func() string
		as      *testcp.User
		args    []string
		ready   corev1.ConditionStatus // the Node's Ready condition, set an hour ago; "" none
		stdin   string                 // NODE: the node's name
		allowed bool
		check   func(t *testing.T, node string) // when allowed: what it did (default: the Node is gone)
		policy  string                          // PID: the node's providerID
		rbac    string                          // the verb RBAC denies
	}{
		{name: "DeleteNotReadyCloudNode", node: func() string { return e.newNode(t, "gpu-t4") }, ready: corev1.ConditionUnknown, as: gc, args: []string{"delete", "node", "NODE"}, allowed: true},
		{name: "DeleteKubeletNotReadyCloudNode", node: func() string { return e.newNode(t, "gpu-t4") }, ready: corev1.ConditionFalse, as: gc, args: []string{"delete", "node", "NODE"}, allowed: true},
		{name: "DeleteReadyCloudNode", node: func() string { return e.newNode(t, "gpu-t4") }, ready: corev1.ConditionTrue, as: gc, args: []string{"delete", "node", "NODE"},
			policy: "node NODE is Ready: the node garbage collector may delete only a node whose Ready condition is False or Unknown"},
		{name: "DeleteCloudNodeWithoutReadyCondition", node: func() string { return e.newNode(t, "gpu-t4") }, as: gc, args: []string{"delete", "node", "NODE"},
			policy: "node NODE is without a Ready condition: the node garbage collector may delete only a node whose Ready condition is False or Unknown"},
		{name: "DeleteCloudNodeWithoutNodeClaim", node: func() string { return e.newNode(t, "gpu-t4") }, as: plain, args: []string{"delete", "node", "NODE"},
			policy: noClaim},
		{name: "DeleteOnPremNode", node: func() string {
			return e.rawNode(t, "onprem-a100", map[string]string{model.VerifiedGroupLabel: "onprem-gpu"}, nil)
		}, as: gc, args: []string{"delete", "node", "NODE"}, policy: groupMsg("onprem-gpu")},
		{name: "DeleteUnlabelledNode", node: func() string { return e.rawNode(t, "cp", nil, nil) }, as: gc, args: []string{"delete", "node", "NODE"}, policy: groupMsg("")},
		// The group label the kubelet sets on itself is not what the policy reads.
		{name: "DeleteKubeletLabelledCloudNode", node: func() string {
			return e.rawNode(t, "t4", map[string]string{model.GroupLabel: "gpu-t4"}, gce(project))
		}, ready: corev1.ConditionUnknown, as: gc, args: []string{"delete", "node", "NODE"}, policy: groupMsg("")},
		{name: "DeleteUnlabelledCloudVM", node: func() string { return e.rawNode(t, "rogue-vm", nil, gce(project)) }, as: gc, args: []string{"delete", "node", "NODE"}, policy: groupMsg("")},
		{name: "DeleteRemovedGroupsNode", node: func() string {
			return e.rawNode(t, "l4-old", map[string]string{model.VerifiedGroupLabel: "l4-old"}, gce(project))
		}, as: gc, args: []string{"delete", "node", "NODE"}, policy: groupMsg("l4-old")},
		{name: "DeleteCloudLabelledUnmanagedProviderID", node: func() string {
			return e.rawNode(t, e.src.Cluster.Name+"-gpu-t4", map[string]string{model.VerifiedGroupLabel: "gpu-t4"}, model.UnmanagedProviderID)
		}, as: gc, args: []string{"delete", "node", "NODE"}, policy: idMsg("PID")},
		{name: "DeleteOtherProjectsVM", node: func() string {
			return e.rawNode(t, "t4", map[string]string{model.VerifiedGroupLabel: "gpu-t4"}, gce("other-project-1"))
		}, as: gc, args: []string{"delete", "node", "NODE"}, policy: idMsg("PID")},
		{name: "DeleteNonGCENode", node: func() string {
			return e.rawNode(t, "t4", map[string]string{model.VerifiedGroupLabel: "gpu-t4"}, func(n string) string { return "kwok://" + n })
		}, as: gc, args: []string{"delete", "node", "NODE"}, policy: idMsg("PID")},
		{name: "DeleteGroupNodeWithoutProviderID", node: func() string {
			return e.rawNode(t, "t4", map[string]string{model.VerifiedGroupLabel: "gpu-t4"}, nil)
		}, as: gc, args: []string{"delete", "node", "NODE"}, policy: idMsg("")},
		{name: "DeleteProviderIDOfAnotherName", node: func() string {
			return e.rawNode(t, "t4", map[string]string{model.VerifiedGroupLabel: "gpu-t4"}, func(string) string { return gce(project)("someone-else") })
		}, as: gc, args: []string{"delete", "node", "NODE"}, policy: idMsg("PID")},
		{name: "Annotate", node: func() string { return e.newNode(t, "gpu-t4") }, as: gc,
			args: []string{"annotate", "node", "NODE", model.StuckAnnotation + "=2026-12-07T10:00:00Z"}, allowed: true, check: annotated("2026-12-07T10:00:00Z")},
		{name: "RemoveAnnotation", node: func() string {
			n := e.newNode(t, "gpu-t4")
			e.admin(t, "", "annotate", "node", n, model.StuckAnnotation+"=2026-12-07T10:00:00Z")
			return n
		}, as: gc, args: []string{"annotate", "node", "NODE", model.StuckAnnotation + "-"}, allowed: true, check: annotated("")},
		{name: "AnnotateNotATime", node: func() string { return e.newNode(t, "gpu-t4") }, as: gc,
			args: []string{"annotate", "node", "NODE", model.StuckAnnotation + "=yes"}, policy: onlyAnnotation},
		{name: "AnnotateOtherKey", node: func() string { return e.newNode(t, "gpu-t4") }, as: gc,
			args: []string{"annotate", "node", "NODE", "example.com/x=y"}, policy: onlyAnnotation},
		{name: "AnnotateOnPremNode", node: func() string {
			return e.rawNode(t, "onprem-a100", map[string]string{model.VerifiedGroupLabel: "onprem-gpu"}, nil)
		}, as: gc, args: []string{"annotate", "node", "NODE", model.StuckAnnotation + "=2026-12-07T10:00:00Z"}, policy: groupMsg("onprem-gpu")},
		{name: "AnnotateWithoutNodeClaim", node: func() string { return e.newNode(t, "gpu-t4") }, as: plain,
			args: []string{"annotate", "node", "NODE", model.StuckAnnotation + "=2026-12-07T10:00:00Z"}, policy: noClaim},
		{name: "Label", node: func() string { return e.newNode(t, "gpu-t4") }, as: gc, args: []string{"label", "node", "NODE", "example.com/x=y"}, policy: onlyAnnotation},
		{name: "Untaint", node: func() string { return e.newNode(t, "gpu-t4") }, as: gc,
			args: []string{"taint", "node", "NODE", e.group(t, "gpu-t4").StartupTaint.Key + "-"}, policy: onlyAnnotation},
		{name: "PatchStatus", node: func() string { return e.newNode(t, "gpu-t4") }, as: gc,
			args: []string{"patch", "node", "NODE", "--subresource=status", "--type=merge", "-p", `{"status":{"allocatable":{"nvidia.com/gpu":"1"}}}`},
			rbac: `get resource "nodes/status"`},
		{name: "BroadenedRBACPatchStatus", node: func() string { return e.newNode(t, "gpu-t4") }, as: broad,
			args:   []string{"patch", "node", "NODE", "--subresource=status", "--type=merge", "-p", `{"status":{"allocatable":{"nvidia.com/gpu":"1"}}}`},
			policy: "the node garbage collector may only delete nodes, set or remove their annotation " + model.StuckAnnotation + " and create events about them, not UPDATE nodes/status"},
		// Without a pod-bound token, whatever RBAC grants.
		{name: "BroadenedRBACUntaint", node: func() string { return e.newNode(t, "gpu-t4") }, as: broad,
			args:   []string{"taint", "node", "NODE", e.group(t, "gpu-t4").StartupTaint.Key + "-"},
			policy: noClaim},
		{name: "Event", node: func() string { return e.newNode(t, "gpu-t4") }, as: gc, stdin: event("default", model.StuckReason, "Node", "NODE"),
			args: []string{"create", "-f", "-"}, allowed: true, check: eventCreated},
		{name: "EventWithoutNodeClaim", node: func() string { return e.newNode(t, "gpu-t4") }, as: plain, stdin: event("default", model.StuckReason, "Node", "NODE"),
			args: []string{"create", "-f", "-"}, policy: noClaim},
		{name: "EventOtherReason", node: func() string { return e.newNode(t, "gpu-t4") }, as: gc, stdin: event("default", "NodeNotReady", "Node", "NODE"),
			args: []string{"create", "-f", "-"}, policy: eventDenied},
		{name: "EventAboutPod", node: func() string { return e.newNode(t, "gpu-t4") }, as: gc, stdin: event("default", model.StuckReason, "Pod", "NODE"),
			args: []string{"create", "-f", "-"}, policy: eventDenied},
		{name: "EventAboutOnPremNode", node: func() string {
			return e.rawNode(t, "onprem-a100", map[string]string{model.VerifiedGroupLabel: "onprem-gpu"}, nil)
		}, as: gc, stdin: event("default", model.StuckReason, "Node", "NODE"), args: []string{"create", "-f", "-"}, policy: eventDenied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			node := c.node()
			if c.ready != "" {
				e.setReady(t, node, c.ready, time.Hour)
			}
			before := e.node(t, node)
			args := subst(c.args, node, "")
			_, stderr, err := kubectl(t, c.as, strings.ReplaceAll(c.stdin, "NODE", node), args...)
			switch {
			case c.allowed:
				if err != nil {
					t.Fatalf("denied: %v: %s", err, stderr)
				}
				if c.check != nil {
					c.check(t, node)
					return
				}
				if e.exists(t, node) {
					t.Fatalf("node %s still exists", node)
				}
				return
			case c.policy != "":
				want := gcPolicyDenied + strings.NewReplacer("NODE", node, "PID", before.Spec.ProviderID).Replace(c.policy)
				if err == nil || !strings.Contains(stderr, want) {
					t.Fatalf("err %v, stderr %q; want a denial by the policy: %q", err, stderr, want)
				}
			default:
				want := fmt.Sprintf("User %q cannot %s", model.NodeCollector.User(), c.rbac)
				if err == nil || !strings.Contains(stderr, want) {
					t.Fatalf("err %v, stderr %q; want a denial by RBAC: %q", err, stderr, want)
				}
			}
			sameNode(t, "after the denied request", e.node(t, node), before, false)
		})
	}
}

// shippedScript is the script name of templates/, as nodegen embeds it.
func shippedScript(t *testing.T, name string) []byte {
	t.Helper()
	b, err := templates.FS.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startupSeconds is the init budget's time to be ready of the source's
// groups (model.InitBudget), in seconds.
func startupSeconds(src *model.Source) string {
	d, _ := src.MaxNodeStartupTime()
	return fmt.Sprint(int64(d / time.Second))
}

// containerEnv is the CronJob's container's environment, by name.
func containerEnv(t *testing.T, cj *batchv1.CronJob) map[string]string {
	t.Helper()
	cs := cj.Spec.JobTemplate.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("CronJob %s has %d containers, want 1", cj.Name, len(cs))
	}
	out := map[string]string{}
	for _, ev := range cs[0].Env {
		out[ev.Name] = ev.Value
	}
	return out
}

// removingCronJob is the collector's CronJob as nodegen renders it for the
// test source with cluster.nodeLifecycle.removeStuckGPUNodes: true. It
// must differ from the one on the server only in REMOVE_STUCK.
func (e *env) removingCronJob(t *testing.T) *batchv1.CronJob {
	t.Helper()
	src := *e.src
	src.Cluster.NodeLifecycle.RemoveStuckGPUNodes = true
	files, err := render.All(&src)
	if err != nil {
		t.Fatal(err)
	}
	var cj *batchv1.CronJob
	for _, doc := range strings.Split(string(files[layout.NodeLifecyclePath]), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind == "CronJob" {
			cj = &batchv1.CronJob{}
			if err := yaml.UnmarshalStrict([]byte(doc), cj); err != nil {
				t.Fatal(err)
			}
		}
	}
	if cj == nil {
		t.Fatalf("%s: no CronJob", layout.NodeLifecyclePath)
	}
	live, rendered := containerEnv(t, e.cronJob), containerEnv(t, cj)
	if live["REMOVE_STUCK"] != "false" || rendered["REMOVE_STUCK"] != "true" {
		t.Fatalf("REMOVE_STUCK is %q on the server (the test source's default) and %q with removeStuckGPUNodes: true; want false and true",
			live["REMOVE_STUCK"], rendered["REMOVE_STUCK"])
	}
	delete(live, "REMOVE_STUCK")
	delete(rendered, "REMOVE_STUCK")
	if !maps.Equal(live, rendered) {
		t.Fatalf("the CronJob's environment with removeStuckGPUNodes differs beyond REMOVE_STUCK: %v, on the server %v", rendered, live)
	}
	c := e.cronJob.DeepCopy()
	c.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env = cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env
	return c
}

// checkStuckReport checks how the collector reported node: when stuck,
// one Warning Event (model.StuckReason) about it in the default namespace
// and, unless want is nil, the Node as want plus model.StuckAnnotation set
// to its Ready condition's last change; otherwise no Event, and the Node
// as want (unless nil).
func (e *env) checkStuckReport(t *testing.T, node string, want *corev1.Node, stuck bool) {
	t.Helper()
	got := e.node(t, node)
	evs, err := e.client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
	if err != nil {
		t.Fatal(err)
	}
	if !stuck {
		if len(evs.Items) != 0 {
			t.Errorf("node %s is not stuck, but has events: %v", node, evs.Items)
		}
		if want != nil {
			sameNode(t, "not stuck", got, want, true)
		}
		return
	}
	var since string
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.NodeReady {
			since = c.LastTransitionTime.UTC().Format(time.RFC3339)
		}
	}
	if len(evs.Items) != 1 {
		t.Fatalf("node %s is stuck: %d events about it, want 1: %v", node, len(evs.Items), evs.Items)
	}
	ev := evs.Items[0]
	ref := ev.InvolvedObject
	if ev.Namespace != "default" || ev.Type != corev1.EventTypeWarning || ev.Reason != model.StuckReason ||
		ref.Kind != "Node" || ref.APIVersion != "v1" || ref.Name != node || ref.UID != got.UID ||
		!strings.Contains(ev.Message, "stuck initialising: startup taint ") || !strings.Contains(ev.Message, "Ready since "+since+",") ||
		ev.Source.Component != model.NodeCollector.Name() || ev.Count != 1 {
		t.Errorf("node %s's event: %+v; want a Warning %s in default about the Node (uid %s), Ready since %s, from %s",
			node, ev, model.StuckReason, got.UID, since, model.NodeCollector.Name())
	}
	if want != nil {
		want = want.DeepCopy()
		if want.Annotations == nil {
			want.Annotations = map[string]string{}
		}
		want.Annotations[model.StuckAnnotation] = since
		sameNode(t, "reported stuck", got, want, true)
	}
}

// testStuckGPUNode: a Ready node of an autoscaled GPU group whose startup
// taint stays on it past its init budget's time to be ready (the
// autoscaler's --max-node-startup-time, which the NodegenStartupTaintStuck
// alert uses too) is reported by the collector; with removeStuckGPUNodes
// its VM is deleted through its MIG's deleteInstances on the Compute API,
// and once the VM is gone (the Node NotReady, the instance 404) the next
// pass deletes its Node. A node whose GPUs validated (it advertises the
// group's nvidia.com/gpu), a node without the taint, one within its
// budget, a CPU node and a VM that is not RUNNING or not the MIG's are
// never touched: not written, and no deleteInstances names them.
func (e *env) testStuckGPUNode(t *testing.T) {
	budget, _ := e.src.MaxNodeStartupTime()
	if got := containerEnv(t, e.cronJob)["STARTUP_SECONDS"]; got != startupSeconds(e.src) {
		t.Fatalf("the collector's STARTUP_SECONDS is %s, the init budget's time to be ready %s", got, budget)
	}
	removing := e.removingCronJob(t)
	g := e.group(t, "gpu-l4")
	zone := g.Zones[0]
	mig := e.src.Cluster.MIGName(g, zone)
	key := g.StartupTaint.Key
	past, within := budget+5*time.Minute, budget-2*time.Minute
	f := newFakeGCE(t, e.src.Cluster.GCP.Project)
	type stuckCase struct {
		name    string
		group   string
		ready   time.Duration // Ready True since
		gpus    string        // nvidia.com/gpu allocatable; "" none
		untaint bool          // the startup taint was removed
		status  string        // the VM's status ("" RUNNING)
		mig     string        // the MIG that made the VM ("" the group's)
		stuck   bool          // reported as stuck initialising
		marked  bool          // reported stuck earlier: carries the annotation
		remove  bool          // its VM deleted through the MIG
		log     string        // with removal on
	}
	cases := []stuckCase{
		{name: "Stuck", group: "gpu-l4", ready: past, stuck: true, remove: true,
			log: "deleted VM ZONE/NODE through MIG " + mig},
		{name: "StuckOneOfTwoGPUs", group: "gpu-l4", ready: past, gpus: "1", stuck: true, remove: true,
			log: "nvidia.com/gpu allocatable 1 of 2; deleted VM ZONE/NODE through MIG " + mig},
		{name: "Validated", group: "gpu-l4", ready: past, gpus: "2",
			log: "but it advertises 2 nvidia.com/gpu of 2: its GPUs validated; kept"},
		{name: "WithinBudget", group: "gpu-l4", ready: within},
		// Reported stuck earlier; it validated since, or became Ready
		// again after a reboot: no longer stuck, the annotation goes.
		{name: "ValidatedAfterReport", group: "gpu-l4", ready: past, gpus: "2", marked: true,
			log: "but it advertises 2 nvidia.com/gpu of 2: its GPUs validated; kept"},
		{name: "RebootedAfterReport", group: "gpu-l4", ready: within, marked: true},
		{name: "TaintRemoved", group: "gpu-l4", ready: past, untaint: true},
		{name: "CPUNode", group: "cpu-burst", ready: past},
		{name: "VMStopping", group: "gpu-l4", ready: past, status: "STOPPING", stuck: true,
			log: "VM ZONE/NODE is STOPPING, not RUNNING; kept"},
		{name: "VMOfAnotherMIG", group: "gpu-l4", ready: past, mig: "someone-elses-mig", stuck: true,
			log: "VM ZONE/NODE was not created by MIG " + mig + " (created-by: projects/" + projectNumber + "/zones/ZONE/instanceGroupManagers/someone-elses-mig); kept"},
	}
	type built struct {
		stuckCase
		node   string
		before *corev1.Node
		after  *corev1.Node // after the first pass
	}
	var nodes []built
	for _, c := range cases {
		n := e.newNode(t, c.group)
		if c.untaint {
			e.admin(t, "", "taint", "node", n, key+"-")
		}
		e.setReady(t, n, corev1.ConditionTrue, c.ready)
		if c.gpus != "" {
			e.setGPUs(t, n, c.gpus)
		}
		if c.marked {
			e.admin(t, "", "annotate", "node", n, model.StuckAnnotation+"=2026-01-02T03:04:05Z")
		}
		status, by := c.status, c.mig
		if status == "" {
			status = "RUNNING"
		}
		if by == "" {
			by = e.src.Cluster.MIGName(e.group(t, c.group), zone)
		}
		f.vm(n, by, status)
		nodes = append(nodes, built{stuckCase: c, node: n, before: e.node(t, n)})
	}
	gc := e.gcIdentity(t, e.gcNode)

	// Off (the default): reported, nothing asked of Compute, nothing written.
	_, out, stderr := e.runGC(t, f, gc)
	if stderr != "" {
		t.Errorf("stderr %q", stderr)
	}
	for i, n := range nodes {
		reported := slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool {
			return strings.Contains(l, " node "+n.node+": stuck initialising: startup taint "+key+" still on it, Ready since ") &&
				strings.HasSuffix(l, "; kept (removing stuck nodes is off)")
		})
		if reported != n.stuck {
			t.Errorf("%s: reported as stuck with removal off: %v, want %v\n%s", n.name, reported, n.stuck, out)
		}
		if slices.Contains(f.askedFor(), n.node) {
			t.Errorf("%s: the Compute API was asked about %s with removal off", n.name, n.node)
		}
		want := n.before
		if n.marked {
			want = n.before.DeepCopy()
			delete(want.Annotations, model.StuckAnnotation)
		}
		e.checkStuckReport(t, n.node, want, n.stuck)
		if !n.stuck && !n.marked {
			sameNode(t, n.name+" with removal off", e.node(t, n.node), n.before, false)
		}
		nodes[i].after = e.node(t, n.node)
	}
	if d := f.deletedInstances(); len(d) != 0 {
		t.Errorf("deleteInstances with removal off: %v", d)
	}

	// On: the stuck nodes' VMs go through their MIG; no Node is written.
	code, out, stderr := e.runCronJob(t, removing, f, gc)
	if code != 1 || stderr != "" {
		t.Errorf("exit %d, stderr %q; want exit 1 (a VM of another MIG) and no stderr", code, stderr)
	}
	if len(f.problems) != 0 {
		t.Errorf("the fake GCE refused requests: %v", f.problems)
	}
	var want []string
	for _, n := range nodes {
		t.Run(n.name, func(t *testing.T) {
			wantLog := strings.NewReplacer("NODE", n.node, "ZONE", zone).Replace(n.log)
			if n.log != "" && !strings.Contains(out, "node "+n.node+": ") {
				t.Errorf("no log line for node %s", n.node)
			}
			if n.log != "" && !strings.Contains(out, wantLog) {
				t.Errorf("log lacks %q", wantLog)
			}
			if n.log == "" && strings.Contains(out, n.node) {
				t.Errorf("the collector logged about node %s, which it must leave alone", n.node)
			}
			if asked := slices.Contains(f.askedFor(), n.node); asked != n.stuck {
				t.Errorf("the Compute API asked about %s: %v, want %v", n.node, asked, n.stuck)
			}
			// Reported once per stuck spell: not written again.
			sameNode(t, n.name+" with removal on", e.node(t, n.node), n.after, false)
			e.checkStuckReport(t, n.node, nil, n.stuck)
		})
		if n.remove {
			want = append(want, mig+" zones/"+zone+"/instances/"+n.node)
		}
	}
	if got := f.deletedInstances(); !slices.Equal(got, want) {
		t.Errorf("deleteInstances calls %v, want %v", got, want)
	}
	if strings.Contains(out, f.token) {
		t.Error("the access token is in the log")
	}

	// The VMs are gone: their kubelets stop and the node lifecycle
	// controller marks their Nodes Unknown; the next pass deletes them
	// (the Compute API answers 404) and nothing else.
	for _, n := range nodes {
		if n.remove {
			e.setReady(t, n.node, corev1.ConditionUnknown, time.Minute)
		}
	}
	_, out, _ = e.runCronJob(t, removing, f, gc)
	for _, n := range nodes {
		if gone := !e.exists(t, n.node); gone != n.remove {
			t.Errorf("%s: node %s deleted %v, want %v\n%s", n.name, n.node, gone, n.remove, out)
			continue
		}
		if !n.remove {
			sameNode(t, n.name+" after the VMs went", e.node(t, n.node), n.after, false)
		}
	}
	if got := f.deletedInstances(); !slices.Equal(got, want) {
		t.Errorf("deleteInstances calls after the VMs went %v, want still %v", got, want)
	}
}
