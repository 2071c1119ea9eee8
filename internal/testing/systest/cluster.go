// Package systest runs the whole system: a rendered out/ served by a fake
// Compute API (internal/testing/gcefake), a real kube-apiserver
// (internal/testing/testcp) and the real Cluster Autoscaler, built from
// source (hack/testca/build.sh), talking to both as in production.
//
// A Cluster stands in for what is neither nodegen's nor the autoscaler's:
//   - the VMs' kubelets: a VM the fake starts registers its Node with the
//     labels, taints and providerID of the JoinConfiguration its instance
//     template's startup script carries (read as verify reads it, decoded
//     with kubeadm's types), the capacity the autoscaler's template code
//     gives its group (nodetemplate), Ready; a GPU node reports its GPUs
//     after GPUInit, as the device plugin does; a VM made Backdate's
//     registers a Node that has been there for long (written into the
//     API server's etcd with its creationTimestamp that far back);
//   - the GPU Operator's validation and the taint remover: GPUValidated
//     after the GPUs are reported, the startup taint goes;
//   - the node lifecycle controller: the not-ready taint the API server's
//     admission gives a new Node goes once it is Ready, and a deleted VM's
//     Node is deleted;
//   - the scheduler: a pending pod is bound to the first Node (by name) it
//     fits (taints, required node affinity and selector with
//     k8s.io/component-helpers, resource requests), or marked
//     PodScheduled=False, reason Unschedulable, which is what the
//     autoscaler looks for.
package systest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodegen/nodegen/internal/agree"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodetemplate"
	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/testing/gcefake"
	"github.com/nodegen/nodegen/internal/testing/testcp"
	"github.com/nodegen/nodegen/internal/verify"
)

// Options shape a Cluster.
type Options struct {
	// Register is how long a RUNNING VM takes to register its Node;
	// RegisterGroup how long one of the named groups' takes instead.
	Register      time.Duration
	RegisterGroup map[string]time.Duration
	// GPUInit is how long a GPU node takes, after it registered, to report
	// its GPUs; GPUValidated how long after that its startup taint goes.
	GPUInit, GPUValidated time.Duration
	// Setup runs on the fake Compute API before the MIGs are read from
	// out/, for faults that must hold from the start.
	Setup func(*gcefake.Server)
}

// Cluster is a rendered source running against a real API server, a fake
// Compute API and stand-ins for the kubelets and the scheduler.
type Cluster struct {
	t       testing.TB
	Dir     string // the source directory
	Out     string // the rendered output directory
	Source  *model.Source
	Files   layout.Files // the rendered files of Out
	CP      *testcp.ControlPlane
	Compute *gcefake.Server
	GCE     *gcefake.Env
	Client  kubernetes.Interface
	opts    Options

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	events []string
	// backdated holds, by MIG name, how the MIG's next VMs register
	// (Backdate), in order.
	backdated map[string][]backdate
}

// backdate is how a VM's Node registers instead of now: ago before, and
// with its GPUs initialised and validated since then when validated.
type backdate struct {
	ago       time.Duration
	validated bool
}

// joinToken is the token put in place of the join script's placeholder;
// nothing checks it here (no kubeadm runs).
const joinToken = "abcdef.0123456789abcdef"

// newCluster renders the source in dir (a one-cluster source) into a temporary
// out/, starts a control plane and the fake Compute API serving that out/,
// and registers the Nodes of the MIGs' initial VMs (the gce-static groups).
func newCluster(t testing.TB, dir string, opts Options) *Cluster {
	t.Helper()
	res, err := pipeline.Run(dir, pipeline.Options{})
	if err != nil {
		t.Fatalf("rendering %s: %v", dir, err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := outdir.WriteWith(out, res.Files, outdir.Options{}); err != nil {
		t.Fatalf("writing %s: %v", out, err)
	}
	src := res.Source.Fleet.Clusters[0]

	cp := testcp.Start(t)
	cfg := &rest.Config{Host: cp.URL, BearerToken: cp.Token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, g := range src.CloudGroups() {
		for _, z := range g.Zones {
			if !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	slices.Sort(zones)
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cluster{t: t, Dir: dir, Out: out, Source: src, Files: res.Files, CP: cp, Client: client, opts: opts, ctx: ctx, cancel: cancel}
	t.Cleanup(func() { cancel(); c.wg.Wait() })

	compute := gcefake.New(src.Cluster.GCP.Project, src.Cluster.GCP.Region, zones)
	compute.MachineType = func(name string) (int64, int64, bool) {
		m, ok := gce.MachineType(name)
		return int64(m.VCPUs), int64(m.MemoryMiB), ok
	}
	compute.OnCreate = c.boot
	compute.OnDelete = c.vanish
	c.Compute = compute
	if opts.Setup != nil {
		opts.Setup(compute)
	}
	if err := gcefake.FromOut(compute, out); err != nil {
		t.Fatalf("reading %s into the fake Compute API: %v", out, err)
	}
	c.GCE = gcefake.Start(t, compute)

	if _, stderr, err := cp.Kubectl(t, "apply", "--server-side", "-f", filepath.Join(out, "cluster-autoscaler", "priority-expander.yaml")); err != nil && src.Cluster.Autoscaler.UsesPriority() {
		t.Fatalf("applying the priority expander's ConfigMap: %v\n%s", err, stderr)
	}
	c.wg.Add(1)
	go c.schedule()
	return c
}

// Logf records an event of the stand-ins, with the time, for failure
// output; Events returns them.
func (c *Cluster) Logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
}

// Events are the stand-ins' events so far.
func (c *Cluster) Events() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.events, "\n")
}

// RegisterNode registers a Node that is not a VM of a MIG (a control-plane
// or on-prem node, as kubeadm leaves it: no providerID), Ready.
func (c *Cluster) RegisterNode(name string, labels map[string]string, taints []corev1.Taint, capacity corev1.ResourceList) {
	c.t.Helper()
	l := map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}
	for k, v := range labels {
		l[k] = v
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Spec: corev1.NodeSpec{Taints: taints}}
	n.Status = nodeStatus(capacity, capacity)
	if err := c.createNode(n); err != nil {
		c.t.Fatalf("registering node %s: %v", name, err)
	}
}

// RunScript runs a rendered script of out/ (a path relative to it) with
// bash and kubectl against the control plane, as an admin runs it.
func (c *Cluster) RunScript(path string, args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{filepath.Join(c.Out, filepath.FromSlash(path))}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.CP.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// boot registers the Node of a VM the fake started, after Register.
func (c *Cluster) boot(inst *gcefake.Instance) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if !c.sleep(c.registerDelay(inst)) {
			return
		}
		if err := c.join(inst); err != nil && c.ctx.Err() == nil {
			c.Logf("VM %s: join failed: %v", inst.Name, err)
		}
	}()
}

// registerDelay is how long inst takes to register: its group's
// RegisterGroup, else Register.
func (c *Cluster) registerDelay(inst *gcefake.Instance) time.Duration {
	for _, g := range c.Source.CloudGroups() {
		d, ok := c.opts.RegisterGroup[g.Name]
		if !ok {
			continue
		}
		for _, z := range g.Zones {
			if c.Source.Cluster.MIGName(g, z) == inst.MIG {
				return d
			}
		}
	}
	return c.opts.Register
}

// join registers inst's Node as its startup script's JoinConfiguration
// says, then plays the GPU initialisation.
func (c *Cluster) join(inst *gcefake.Instance) error {
	tmpl := c.Compute.Template(inst.Template)
	if tmpl == nil {
		return fmt.Errorf("no template %s", inst.Template)
	}
	doc, err := verify.JoinTemplateOf([]byte(tmpl.Metadata["startup-script"]))
	if err != nil {
		return err
	}
	filled := strings.NewReplacer(model.InstancePlaceholder, inst.Name, model.ZonePlaceholder, inst.Zone, model.TokenPlaceholder, joinToken).Replace(string(doc))
	cfg, err := kubeadm.DecodeJoinConfiguration([]byte(filled))
	if err != nil {
		return err
	}
	joined, err := agree.FromJoinConfiguration(cfg)
	if err != nil {
		return err
	}
	var g *model.NodeGroup
	for _, cg := range c.Source.CloudGroups() {
		if cg.Name == joined.Labels[model.GroupLabel] {
			g = cg
		}
	}
	if g == nil {
		return fmt.Errorf("the join labels name no group of the source: %v", joined.Labels)
	}
	tn, err := nodetemplate.TemplateNode(&c.Source.Cluster, g, inst.Zone, []byte(tmpl.Metadata["kube-env"]), nil)
	if err != nil {
		return err
	}
	labels := map[string]string{corev1.LabelHostname: joined.Name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}
	for k, v := range joined.Labels {
		labels[k] = v
	}
	var taints []corev1.Taint
	for _, t := range joined.Taints {
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	capacity, allocatable := tn.Status.Capacity.DeepCopy(), tn.Status.Allocatable.DeepCopy()
	gpus := allocatable[corev1.ResourceName(model.GPUResource)]
	delete(capacity, corev1.ResourceName(model.GPUResource))
	delete(allocatable, corev1.ResourceName(model.GPUResource))
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: joined.Name, Labels: labels},
		Spec: corev1.NodeSpec{ProviderID: joined.ProviderID, Taints: taints}}
	n.Status = nodeStatus(capacity, allocatable)
	if b, ok := c.nextBackdate(inst.MIG); ok {
		// What the approver, the device plugin and the taint remover did
		// since, long ago.
		for k, v := range model.VerifiedLabels(g) {
			n.Labels[k] = v
		}
		if b.validated && !gpus.IsZero() {
			n.Status.Capacity[corev1.ResourceName(model.GPUResource)] = gpus
			n.Status.Allocatable[corev1.ResourceName(model.GPUResource)] = gpus
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return strings.HasPrefix(t.Key, model.StartupTaintPrefix) })
		}
		at := time.Now().Add(-b.ago)
		if err := c.createNodeAt(n, at); err != nil {
			return err
		}
		c.Logf("node %s stored as registered at %s (group %s, taints %v)", n.Name, at.Format("15:04:05"), g.Name, n.Spec.Taints)
		return nil
	}
	if err := c.createNode(n); err != nil {
		return err
	}
	c.Logf("node %s registered (group %s, providerID %s)", n.Name, g.Name, n.Spec.ProviderID)
	// The node CSR approver's part: once it matched the Node to its MIG's
	// instance, it adds the verified group labels, which the kubelet
	// cannot set (kube-env declares them for the autoscaler's template).
	if err := c.patchNode(n.Name, func(n *corev1.Node) bool {
		for k, v := range model.VerifiedLabels(g) {
			n.Labels[k] = v
		}
		return true
	}, false); err != nil {
		return err
	}
	c.Logf("node %s labelled %v, as the approver does", n.Name, model.VerifiedLabels(g))
	if gpus.IsZero() {
		return nil
	}
	if !c.sleep(c.opts.GPUInit) {
		return nil
	}
	if err := c.patchNode(n.Name, func(n *corev1.Node) bool {
		n.Status.Capacity[corev1.ResourceName(model.GPUResource)] = gpus
		n.Status.Allocatable[corev1.ResourceName(model.GPUResource)] = gpus
		return true
	}, true); err != nil {
		return err
	}
	c.Logf("node %s reports %s %s", n.Name, gpus.String(), model.GPUResource)
	if !c.sleep(c.opts.GPUValidated) {
		return nil
	}
	if err := c.patchNode(n.Name, func(n *corev1.Node) bool {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return strings.HasPrefix(t.Key, model.StartupTaintPrefix) })
		return true
	}, false); err != nil {
		return err
	}
	c.Logf("node %s: GPUs validated, startup taint removed", n.Name)
	return nil
}

// vanish deletes the Node of a deleted VM.
func (c *Cluster) vanish(inst *gcefake.Instance) {
	err := c.Client.CoreV1().Nodes().Delete(c.ctx, inst.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) && c.ctx.Err() == nil {
		c.Logf("deleting node %s: %v", inst.Name, err)
		return
	}
	c.Logf("VM %s deleted, its node removed", inst.Name)
}

func nodeStatus(capacity, allocatable corev1.ResourceList) corev1.NodeStatus {
	now := metav1.Now()
	return corev1.NodeStatus{
		Capacity: capacity, Allocatable: allocatable,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now}},
	}
}

// kubeletAnnotations are what a kubelet puts on the Node it registers
// (kubernetes v1.37.2, pkg/kubelet/kubelet_node_status.go initialNode):
// a real Node never has nil annotations, and the autoscaler relies on it
// (cluster-autoscaler-1.35.2, processors/nodeinfosprovider/
// annotation_node_info_provider.go writes into them).
var kubeletAnnotations = map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"}

// createNode creates a Node with its status, as a kubelet registers, and
// removes the not-ready taint that admission (TaintNodesByCondition)
// gives every new Node, as the node lifecycle controller does once the
// Node is Ready.
func (c *Cluster) createNode(n *corev1.Node) error {
	n.Annotations = map[string]string{}
	for k, v := range kubeletAnnotations {
		n.Annotations[k] = v
	}
	created, err := c.Client.CoreV1().Nodes().Create(c.ctx, n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if created.Status.Allocatable == nil {
		created.Status = n.Status
		if _, err := c.Client.CoreV1().Nodes().UpdateStatus(c.ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return c.patchNode(n.Name, func(n *corev1.Node) bool {
		before := len(n.Spec.Taints)
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		return len(n.Spec.Taints) != before
	}, false)
}

// Backdate makes the next VM that the MIG named mig creates register its
// Node as a kubelet did ago before, and with validated as one whose GPUs
// were reported and validated since (its startup taint gone): the state a
// cluster is in once a node has been there that long, which a test cannot
// wait for. The API server sets a Node's creationTimestamp itself on
// create and keeps it on update, so the Node goes into etcd as the API
// server stores it (createNodeAt).
func (c *Cluster) Backdate(mig string, ago time.Duration, validated bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.backdated == nil {
		c.backdated = map[string][]backdate{}
	}
	c.backdated[mig] = append(c.backdated[mig], backdate{ago: ago, validated: validated})
}

func (c *Cluster) nextBackdate(mig string) (backdate, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.backdated[mig]
	if len(q) == 0 {
		return backdate{}, false
	}
	c.backdated[mig] = q[1:]
	return q[0], true
}

// nodeKey is where kube-apiserver keeps a Node in etcd: its default
// --etcd-prefix, then the resource prefix of nodes, "minions"
// (kubernetes v1.37.2, pkg/kubeapiserver/default_storage_factory_builder.go,
// SpecialDefaultResourcePrefixes).
func nodeKey(name string) string { return "/registry/minions/" + name }

// nodeCodec encodes a Node as kube-apiserver stores it with its default
// --storage-media-type, application/vnd.kubernetes.protobuf (kubernetes
// v1.37.2, pkg/controlplane/apiserver/options/options.go NewOptions):
// the storage version v1, protobuf behind the "k8s\x00" prefix
// (k8s.io/apimachinery's protobuf serializer).
var nodeCodec = func() runtime.Encoder {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		panic("client-go's scheme has no protobuf serializer")
	}
	return scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
}()

// createNodeAt registers n as createNode does, but as registered at at:
// the API server admits it in a server-side dry run of the kubelet's
// create (validation, defaults, the UID, TaintNodesByCondition's
// not-ready taint, which the node lifecycle controller has removed since,
// as for a Ready node), and the admitted Node, its creationTimestamp and
// field-manager times set to at, goes into etcd at its key, created there
// only if absent, as the API server's own creates do. The API server's
// watch of etcd then serves it to every client as any other Node.
func (c *Cluster) createNodeAt(n *corev1.Node, at time.Time) error {
	n.Annotations = map[string]string{}
	for k, v := range kubeletAnnotations {
		n.Annotations[k] = v
	}
	admitted, err := c.Client.CoreV1().Nodes().Create(c.ctx, n, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return err
	}
	if admitted.Status.Allocatable == nil {
		admitted.Status = n.Status
	}
	admitted.Spec.Taints = slices.DeleteFunc(admitted.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	ts := metav1.NewTime(at.Truncate(time.Second))
	admitted.CreationTimestamp = ts
	for i := range admitted.ManagedFields {
		admitted.ManagedFields[i].Time = &ts
	}
	for i := range admitted.Status.Conditions {
		admitted.Status.Conditions[i].LastTransitionTime = ts
	}
	admitted.ResourceVersion = ""
	raw, err := runtime.Encode(nodeCodec, admitted)
	if err != nil {
		return err
	}
	if err := etcdCreate(c.ctx, c.CP.EtcdURL, nodeKey(n.Name), raw); err != nil {
		return fmt.Errorf("storing node %s in etcd: %w", n.Name, err)
	}
	for c.Node(n.Name) == nil {
		if !c.sleep(100 * time.Millisecond) {
			return c.ctx.Err()
		}
	}
	return nil
}

// etcdCreate stores value at key unless the key exists, in one
// transaction (a compare of the key's mod revision with 0, then a put),
// through etcd's gRPC gateway: its KV API as JSON on the client URL, bytes
// in base64, field names as in the proto (etcd-io/etcd v3.6.16,
// server/embed/serve.go registerGateway; on by default,
// --enable-grpc-gateway).
func etcdCreate(ctx context.Context, etcdURL, key string, value []byte) error {
	b64 := base64.StdEncoding.EncodeToString
	body, err := json.Marshal(map[string]any{
		"compare": []map[string]any{{"target": "MOD", "result": "EQUAL", "key": b64([]byte(key)), "mod_revision": "0"}},
		"success": []map[string]any{{"request_put": map[string]any{"key": b64([]byte(key)), "value": b64(value)}}},
	})
	if err != nil {
		return err
	}
	var res struct {
		Succeeded bool `json:"succeeded"`
	}
	if err := etcdCall(ctx, etcdURL, "/v3/kv/txn", body, &res); err != nil {
		return err
	}
	if !res.Succeeded {
		return fmt.Errorf("%s exists", key)
	}
	return nil
}

// etcdGet returns the value etcd holds at key, nil when there is none.
func etcdGet(ctx context.Context, etcdURL, key string) ([]byte, error) {
	body, err := json.Marshal(map[string]any{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	if err != nil {
		return nil, err
	}
	var res struct {
		KVs []struct {
			Value []byte `json:"value"`
		} `json:"kvs"`
	}
	if err := etcdCall(ctx, etcdURL, "/v3/kv/range", body, &res); err != nil {
		return nil, err
	}
	if len(res.KVs) == 0 {
		return nil, nil
	}
	return res.KVs[0].Value, nil
}

func etcdCall(ctx context.Context, etcdURL, path string, body []byte, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, etcdURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, r.Status, b)
	}
	return json.Unmarshal(b, v)
}

// patchNode changes a Node (its status with status), retrying on conflicts.
func (c *Cluster) patchNode(name string, change func(*corev1.Node) bool, status bool) error {
	for {
		n, err := c.Client.CoreV1().Nodes().Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !change(n) {
			return nil
		}
		if status {
			_, err = c.Client.CoreV1().Nodes().UpdateStatus(c.ctx, n, metav1.UpdateOptions{})
		} else {
			_, err = c.Client.CoreV1().Nodes().Update(c.ctx, n, metav1.UpdateOptions{})
		}
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

func (c *Cluster) sleep(d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-c.ctx.Done():
		return false
	}
}

// schedule binds pending pods, once a second, as the scheduler would.
func (c *Cluster) schedule() {
	defer c.wg.Done()
	for c.sleep(time.Second) {
		if err := c.scheduleOnce(); err != nil && c.ctx.Err() == nil {
			c.Logf("scheduler: %v", err)
		}
	}
}

func (c *Cluster) scheduleOnce() error {
	pods, err := c.Client.CoreV1().Pods("").List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	nodes, err := c.Client.CoreV1().Nodes().List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	used := map[string]corev1.ResourceList{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" {
			add(used, p.Spec.NodeName, resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
		}
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		node := ""
		for j := range nodes.Items {
			if n := &nodes.Items[j]; fits(p, req, n, used[n.Name]) {
				node = n.Name
				break
			}
		}
		if node == "" {
			if err := c.markUnschedulable(p); err != nil {
				return err
			}
			continue
		}
		err := c.Client.CoreV1().Pods(p.Namespace).Bind(c.ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		add(used, node, req)
		c.Logf("pod %s/%s bound to %s", p.Namespace, p.Name, node)
	}
	return nil
}

func (c *Cluster) markUnschedulable(p *corev1.Pod) error {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			return nil
		}
	}
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = append(slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled }),
		corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/N nodes are available", LastTransitionTime: metav1.Now()})
	_, err := c.Client.CoreV1().Pods(p.Namespace).UpdateStatus(c.ctx, p, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func add(used map[string]corev1.ResourceList, node string, req corev1.ResourceList) {
	u := used[node]
	if u == nil {
		u = corev1.ResourceList{}
		used[node] = u
	}
	for k, v := range req {
		q := u[k]
		q.Add(v)
		u[k] = q
	}
	q := u[corev1.ResourcePods]
	q.Add(*resource.NewQuantity(1, resource.DecimalSI))
	u[corev1.ResourcePods] = q
}

// fits reports whether a pod fits a node as the scheduler's filters see
// it: Ready and schedulable, every NoSchedule and NoExecute taint
// tolerated, the required node affinity and node selector matched, and
// the requests within what the node's other pods leave of its allocatable.
func fits(p *corev1.Pod, req corev1.ResourceList, n *corev1.Node, used corev1.ResourceList) bool {
	if n.Spec.Unschedulable || n.DeletionTimestamp != nil {
		return false
	}
	ready := false
	for _, cond := range n.Status.Conditions {
		ready = ready || cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue
	}
	if !ready {
		return false
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false); untolerated {
		return false
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); err != nil || !ok {
		return false
	}
	want := req.DeepCopy()
	want[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	for k, v := range want {
		left := n.Status.Allocatable[k].DeepCopy()
		left.Sub(used[k])
		if v.Cmp(left) > 0 {
			return false
		}
	}
	return true
}

// pendingPod is a pending pod of the default namespace with requests, tolerating
// tolerate (keys, any value and effect) and selecting selector.
func pendingPod(name string, requests corev1.ResourceList, selector map[string]string, tolerate ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			// A pod without a controller: the autoscaler may still count it
			// as pending and schedule it in its simulation.
			Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeSelector: selector,
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: gpuLimits(requests)}}},
		},
	}
	for _, k := range tolerate {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: k, Operator: corev1.TolerationOpExists})
	}
	return p
}

// gpuLimits are the limits a request of extended resources needs (they
// cannot be overcommitted: the API server requires limit = request).
func gpuLimits(req corev1.ResourceList) corev1.ResourceList {
	if q, ok := req[corev1.ResourceName(model.GPUResource)]; ok {
		return corev1.ResourceList{corev1.ResourceName(model.GPUResource): q}
	}
	return nil
}

// Create creates pods.
func (c *Cluster) Create(pods ...*corev1.Pod) {
	c.t.Helper()
	for _, p := range pods {
		if _, err := c.Client.CoreV1().Pods(p.Namespace).Create(c.ctx, p, metav1.CreateOptions{}); err != nil {
			c.t.Fatalf("creating pod %s: %v", p.Name, err)
		}
	}
}

// DeletePod deletes a pod at once (there is no kubelet to stop it).
func (c *Cluster) DeletePod(namespace, name string) {
	c.t.Helper()
	zero := int64(0)
	if err := c.Client.CoreV1().Pods(namespace).Delete(c.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		c.t.Fatalf("deleting pod %s: %v", name, err)
	}
}

// NodeOf returns the node a pod is bound to, "" if none.
func (c *Cluster) NodeOf(namespace, name string) string {
	p, err := c.Client.CoreV1().Pods(namespace).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return p.Spec.NodeName
}

// Nodes returns the names of the Nodes whose names start with prefix.
func (c *Cluster) Nodes(prefix string) []string {
	list, err := c.Client.CoreV1().Nodes().List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range list.Items {
		if strings.HasPrefix(n.Name, prefix) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Node returns a Node, nil when it does not exist.
func (c *Cluster) Node(name string) *corev1.Node {
	n, err := c.Client.CoreV1().Nodes().Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return n
}

// Autoscaler is a running Cluster Autoscaler process.
type Autoscaler struct {
	Log  string // the path of its output
	Addr string // host:port of its metrics (--address)
	cmd  *exec.Cmd
}

// StartAutoscaler runs the autoscaler binary with the flags of the
// rendered out/cluster-autoscaler/flags.txt, then what a process outside
// the chart needs (the API server's kubeconfig, a cloud config naming the
// project and zone, no leader election, its own metrics port), then
// extra, which win over flags.txt's (the last value of a flag counts). It
// reaches the fake Compute API as in production: through the HTTPS proxy,
// trusting the fake's CA, with the token of the metadata server.
func (c *Cluster) StartAutoscaler(bin string, extra ...string) *Autoscaler {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Out, "cluster-autoscaler", "flags.txt"))
	if err != nil {
		c.t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			args = append(args, line)
		}
	}
	dir := c.t.TempDir()
	cloudConfig := filepath.Join(dir, "cloud-config")
	zone := c.Compute.Zones[0]
	if err := os.WriteFile(cloudConfig, []byte("[global]\nproject-id = "+c.Compute.Project+"\nlocal-zone = "+zone+"\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		c.t.Fatal(err)
	}
	args = append(args,
		"--kubeconfig="+c.CP.Kubeconfig,
		"--cloud-config="+cloudConfig,
		"--leader-elect=false",
		"--address=127.0.0.1:"+port,
		"--scan-interval=5s",
		"--v=4",
	)
	args = append(args, extra...)
	a := &Autoscaler{Log: filepath.Join(dir, "cluster-autoscaler.log"), Addr: "127.0.0.1:" + port}
	logf, err := os.Create(a.Log)
	if err != nil {
		c.t.Fatal(err)
	}
	a.cmd = exec.Command(bin, args...)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	a.cmd.Env = append(os.Environ(), c.GCE.ProcessEnv()...)
	if err := a.cmd.Start(); err != nil {
		c.t.Fatalf("starting the autoscaler: %v", err)
	}
	c.t.Cleanup(func() {
		_ = a.cmd.Process.Kill()
		_ = a.cmd.Wait()
		logf.Close()
		if c.t.Failed() {
			c.t.Logf("the stand-ins' events:\n%s", c.Events())
			c.t.Logf("the autoscaler's log (%s), its last lines:\n%s", a.Log, tail(a.Output(), 80))
		}
	})
	return a
}

// Stop ends the autoscaler (its log stays), as a Deployment's rollout
// ends an old replica's container.
func (a *Autoscaler) Stop() {
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
}

// Output is what the autoscaler has written so far.
func (a *Autoscaler) Output() string {
	b, _ := os.ReadFile(a.Log)
	return string(b)
}

// Count is how many lines of the output hold s.
func (a *Autoscaler) Count(s string) int {
	n := 0
	for _, l := range strings.Split(a.Output(), "\n") {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// eventually polls cond every 500ms until it holds or timeout passes.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}
