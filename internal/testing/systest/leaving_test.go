package systest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/gcefake"
	"github.com/nodegen/nodegen/internal/testing/testca"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// What the stock autoscaler logs each loop while its --nodes names a MIG
// that no longer exists (kubernetes/autoscaler cluster-autoscaler-1.35.2,
// core/static_autoscaler.go updateClusterState: the MIG's 404 ends every
// loop before any scale-up), and what it logs when it starts, or
// refreshes its MIGs, with one missing (cloudprovider/gce/gce_manager.go
// forceRefresh).
var migGoneErrors = []string{"Failed to update node registry", "Failed to fetch MIGs"}

// TestZoneLeavesInPrintedOrder: a zone removed from a group (spot-gpu-t4's
// us-central1-c, whose MIG has a node) and carried out as nodegen prints
// it, with the stock autoscaler running throughout as its chart's release
// (a Deployment whose arguments are flags.txt's, and its one replica):
// gen and the plan print the order, helm upgrade, then rollout --yes,
// then terraform apply. A rollout --yes run before the helm upgrade
// refuses: the running autoscaler names the MIG, which stays with its
// node. After the upgrade, rollout --yes drains the node and deletes the
// MIG, and terraform apply finds no MIG to delete. After each step a pod
// only cpu-burst takes gets a new cpu-burst node, and the autoscaler never
// logs a missing MIG. With the MIG deleted under an autoscaler that
// names it, it scales no group at all.
func TestZoneLeavesInPrintedOrder(t *testing.T) {
	t.Parallel()
	bin := testca.Binary(t, nil)
	nodegen := nodegenBinary(t)
	c := hybrid(t, Options{Register: time.Second, GPUInit: time.Second, GPUValidated: time.Second})
	setProviderID(t, c)
	spot := group(t, c, "spot-gpu-t4")
	const zone = "us-central1-c"
	mig := c.Source.Cluster.MIGName(spot, zone)
	c.Compute.Resize(zone, mig, 1)
	var leaving string
	if !eventually(30*time.Second, func() bool {
		vms := c.Compute.Instances(mig)
		if len(vms) != 1 {
			return false
		}
		leaving = vms[0].Name
		n := c.Node(leaving)
		return n != nil && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return strings.HasPrefix(t.Key, model.StartupTaintPrefix) })
	}) {
		t.Fatalf("the node of MIG %s did not register and initialise:\n%s", mig, c.Events())
	}
	rel := install(t, c, bin)

	// The change, and what gen says to run.
	file := filepath.Join(c.Dir, "spot-gpu-t4.cue")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const zones = `zones: ["us-central1-a", "us-central1-b", "us-central1-c"]`
	if !bytes.Contains(src, []byte(zones)) {
		t.Fatalf("%s has no %s", file, zones)
	}
	if err := os.WriteFile(file, bytes.Replace(src, []byte(zones), []byte(`zones: ["us-central1-a", "us-central1-b"]`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := c.nodegen(t, nodegen, "gen", "--source", c.Dir, "--out", c.Out)
	if code != 0 {
		t.Fatalf("gen: exit %d\n%s", code, out)
	}
	inOrder(t, "gen", out, "MIG "+mig+" leaves the source", "so, in this order: 1. `helm upgrade --install cluster-autoscaler ", "2. `nodegen rollout --yes`", "3. terraform apply")
	out, code = c.nodegen(t, nodegen, "rollout", "--source", c.Dir, "--kubeconfig", c.CP.Kubeconfig)
	if code != 0 {
		t.Fatalf("the plan: exit %d\n%s", code, out)
	}
	inOrder(t, "the plan", out, "in this order: 1. `helm upgrade --install cluster-autoscaler ", "2. `nodegen rollout --yes`, 3. `terraform apply`", "MIG "+mig, leaving)

	// Before the helm upgrade, the rollout refuses: nothing of the MIG is
	// drained or deleted.
	out, code = c.nodegen(t, nodegen, "rollout", "--yes", "--poll", "1s", "--source", c.Dir, "--kubeconfig", c.CP.Kubeconfig)
	t.Logf("rollout --yes before the helm upgrade: exit %d\n%s", code, out)
	if want := "the running autoscaler (Deployment " + c.Source.Cluster.Autoscaler.Namespace + "/" + model.AutoscalerFullname + ") still names MIG " + mig; code != 1 || !strings.Contains(out, want) {
		t.Errorf("rollout --yes before the helm upgrade: exit %d, want 1 and %q", code, want)
	}
	if vms := c.Compute.Instances(mig); len(vms) != 1 || c.Node(leaving) == nil || c.Node(leaving).Spec.Unschedulable {
		t.Errorf("the rollout refused, yet MIG %s holds %v and node %s is %v", mig, vms, leaving, c.Node(leaving))
	}
	probe(t, c, rel, "after the refused rollout")

	// 1. helm upgrade.
	rel.upgrade(t)
	probe(t, c, rel, "after the helm upgrade")

	// 2. rollout --yes.
	out, code = c.nodegen(t, nodegen, "rollout", "--yes", "--poll", "1s", "--source", c.Dir, "--kubeconfig", c.CP.Kubeconfig)
	t.Logf("rollout --yes: exit %d\n%s", code, out)
	if code != 0 {
		t.Errorf("rollout --yes after the helm upgrade: exit %d", code)
	}
	inOrder(t, "rollout --yes", out, "drained "+leaving, "MIG "+mig+" is empty and deleted", "rollout done")
	if slices.ContainsFunc(c.Compute.MIGs(), func(m gcefake.MIG) bool { return m.Name == mig }) || c.Node(leaving) != nil {
		t.Errorf("after rollout --yes, MIG %s or node %s is still there", mig, leaving)
	}
	probe(t, c, rel, "after rollout --yes")

	// 3. terraform apply: the MIGs Compute holds are those of the
	// rendered Terraform, so it has none to delete (and refuse to). It
	// changes nothing the autoscaler reads: the group's template stays.
	rendered := gcefake.New(c.Compute.Project, c.Compute.Region, c.Compute.Zones)
	if err := gcefake.FromOut(rendered, c.Out); err != nil {
		t.Fatal(err)
	}
	if have, want := migNames(c.Compute.MIGs()), migNames(rendered.MIGs()); !slices.Equal(have, want) {
		t.Errorf("Compute holds MIGs %v, the rendered Terraform %v", have, want)
	}

	for i, ca := range rel.replicas {
		for _, e := range migGoneErrors {
			if n := ca.Count(e); n > 0 {
				t.Errorf("the autoscaler (replica %d) logged %q %d times", i+1, e, n)
			}
		}
	}
}

// inOrder checks that out holds each of wants, in that order.
func inOrder(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	at := 0
	for _, w := range wants {
		i := strings.Index(out[at:], w)
		if i < 0 {
			t.Errorf("%s does not say %q (after what came before):\n%s", what, w, out)
			return
		}
		at += i + len(w)
	}
}

func migNames(migs []gcefake.MIG) []string {
	var out []string
	for _, m := range migs {
		out = append(out, m.Zone+"/"+m.Name)
	}
	slices.Sort(out)
	return out
}

// probe creates a pod only cpu-burst takes (7 of its 8 vCPUs: each needs
// a node of its own) and waits until it runs on a cpu-burst node the
// autoscaler added for it.
func probe(t *testing.T, c *Cluster, rel *release, name string) {
	t.Helper()
	burst := group(t, c, "cpu-burst")
	pod := cpuPod(strings.Join(strings.Fields(strings.ReplaceAll(name, "-", " ")), "-"))
	before := created(c, burst)
	c.Create(pod)
	start := time.Now()
	if !eventually(90*time.Second, func() bool {
		n := c.NodeOf(pod.Namespace, pod.Name)
		return n != "" && !slices.ContainsFunc(before, func(i gcefake.Instance) bool { return i.Name == n }) &&
			slices.ContainsFunc(created(c, burst), func(i gcefake.Instance) bool { return i.Name == n })
	}) {
		ca := rel.replicas[len(rel.replicas)-1]
		t.Errorf("%s: pod %s got no new cpu-burst node in 90s (the autoscaler logged %q %d times); calls:\n%s", name, pod.Name, migGoneErrors[0], ca.Count(migGoneErrors[0]), mutated(c))
		return
	}
	t.Logf("%s: pod %s runs on a new cpu-burst node %v after it was created", name, pod.Name, time.Since(start).Round(time.Second))
}

// release is the autoscaler as its chart's helm release runs it: the
// Deployment (cluster.autoscaler.namespace/cluster-autoscaler) whose
// container's arguments are the lines of out/'s flags.txt (the chart
// renders every one of them from values.yaml), and its one replica, the
// autoscaler process started with the same flags. The API server has no
// deployment controller: the stand-in writes the status it would.
type release struct {
	c        *Cluster
	bin      string
	replicas []*Autoscaler // every replica started, the running one last
}

// install is helm install of the release from out/ as it is.
func install(t *testing.T, c *Cluster, bin string) *release {
	t.Helper()
	r := &release{c: c, bin: bin}
	r.upgrade(t)
	return r
}

// upgrade is helm upgrade from out/ as it is now: the Deployment gets
// flags.txt's arguments, the running replica ends, a new one starts with
// them, and then the Deployment's status says that every replica runs
// its newest template.
func (r *release) upgrade(t *testing.T) {
	t.Helper()
	c := r.c
	b, err := os.ReadFile(filepath.Join(c.Out, "cluster-autoscaler", "flags.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "--") {
			args = append(args, l)
		}
	}
	ctx := context.Background()
	deps := c.Client.AppsV1().Deployments(c.Source.Cluster.Autoscaler.Namespace)
	d, err := deps.Get(ctx, model.AutoscalerFullname, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		one := int32(1)
		sel := map[string]string{"app.kubernetes.io/name": "cluster-autoscaler"}
		d, err = deps.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: model.AutoscalerFullname, Namespace: c.Source.Cluster.Autoscaler.Namespace},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cluster-autoscaler",
						Image:   "registry.k8s.io/autoscaling/cluster-autoscaler:v" + testca.Version,
						Command: []string{"./cluster-autoscaler"}, Args: args}}}}},
		}, metav1.CreateOptions{})
	case err == nil:
		d.Spec.Template.Spec.Containers[0].Args = args
		d, err = deps.Update(ctx, d, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("the autoscaler's Deployment: %v", err)
	}
	if n := len(r.replicas); n > 0 {
		r.replicas[n-1].Stop()
	}
	r.replicas = append(r.replicas, c.StartAutoscaler(r.bin))
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if _, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the autoscaler's Deployment's status: %v", err)
	}
}

// nodegen runs the nodegen binary as a user on a machine with Google's
// credentials does (the metadata server's; no other), against the fake
// Compute API, and returns its output (stdout, then stderr) and exit code.
func (c *Cluster) nodegen(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), c.GCE.ProcessEnv()...)
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir(), "GOOGLE_APPLICATION_CREDENTIALS=", "KUBECONFIG=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("nodegen %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String() + stderr.String(), cmd.ProcessState.ExitCode()
}

// nodegenBinary builds cmd/nodegen for the test.
func nodegenBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nodegen")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/nodegen")
	cmd.Dir = testsrc.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/nodegen: %v\n%s", err, out)
	}
	return bin
}
