package k8stest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testcp"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestLabelOnpremListsIntolerantPods runs the rendered
// label-onprem-nodes.sh against a real API server where an existing
// on-prem GPU server, not yet tainted, runs other teams' pods: with
// --dry-run it lists, by namespace and name, each running pod that does
// not tolerate the taint it would add (no toleration, one for another key,
// one for another value), and not those that tolerate it (Equal with the
// value, Exists on the key, Exists on every key) nor a finished one; the
// run lists them again before it taints the Node.
func TestLabelOnpremListsIntolerantPods(t *testing.T) {
	_, files := testsrc.Render(t, testsrc.Copy(t, map[string]string{"nodes.cue": `nodeGroups: "onprem-gpu": nodes: "a100-01": {cpu: 128, memoryGiB: 1024}
cluster: controlPlaneNodes: "cp-1": {cpu: 16, memoryGiB: 64}
`}))
	kubectlPath, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl not on PATH: %v", err)
	}
	cp := testcp.StartWith(t, testcp.Options{Production: true})
	admin := cp.Admin()
	pod := func(ns, name, tolerations string) string {
		return "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: " + ns + ", name: " + name + "}\nspec:\n  nodeName: a100-01\n  containers: [{name: c, image: registry.example.com/c:1}]\n  tolerations: " + tolerations + "\n"
	}
	objects := "apiVersion: v1\nkind: Node\nmetadata: {name: a100-01}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n" +
		pod("team-a", "train-0", "[]") +
		pod("team-a", "other-key", `[{key: example.com/x, operator: Exists, effect: NoSchedule}]`) +
		pod("team-a", "other-value", `[{key: nvidia.com/gpu, operator: Equal, value: absent, effect: NoSchedule}]`) +
		pod("kube-system", "node-agent", `[{operator: Exists}]`) +
		pod("team-a", "gpu-job", `[{key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}]`) +
		pod("team-a", "gpu-any", `[{key: nvidia.com/gpu, operator: Exists}]`) +
		pod("team-a", "done", "[]")
	if out, stderr, err := kubectl(t, admin, objects, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", err, out, stderr)
	}
	// A finished pod is not running there.
	if out, stderr, err := kubectl(t, admin, `{"status":{"phase":"Succeeded"}}`, "patch", "pod", "-n", "team-a", "done", "--subresource=status", "--type=merge", "--patch-file=/dev/stdin"); err != nil {
		t.Fatalf("kubectl patch: %v\n%s%s", err, out, stderr)
	}
	script := filepath.Join(t.TempDir(), "label-onprem-nodes.sh")
	if err := os.WriteFile(script, files[layout.OnpremLabelNodesPath], 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Env = []string{"PATH=" + filepath.Dir(kubectlPath) + ":/usr/bin:/bin", "KUBECONFIG=" + admin.Kubeconfig, "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		t.Logf("label-onprem-nodes.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		if err != nil {
			t.Fatalf("label-onprem-nodes.sh %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	const taint = "nvidia.com/gpu=present:NoSchedule"
	check := func(out string) {
		t.Helper()
		for _, p := range []string{"team-a/train-0", "team-a/other-key", "team-a/other-value"} {
			if !strings.Contains(out, "node a100-01: pod "+p+" does not tolerate "+taint+": it keeps running, but no pod like it schedules here again") {
				t.Errorf("pod %s, which does not tolerate %s, is not listed", p, taint)
			}
		}
		for _, p := range []string{"kube-system/node-agent", "team-a/gpu-job", "team-a/gpu-any", "team-a/done"} {
			if strings.Contains(out, "pod "+p+" ") {
				t.Errorf("pod %s is listed, but it tolerates the taint or has finished", p)
			}
		}
		if !strings.Contains(out, "3 running pod(s) do not tolerate a taint added") {
			t.Error("no count of the pods that do not tolerate the taint")
		}
	}
	check(run("--dry-run"))
	if out, _, _ := kubectl(t, admin, "", "get", "node", "a100-01", "-o", "jsonpath={.spec.taints}"); strings.Contains(out, "nvidia.com/gpu") {
		t.Fatalf("the dry run tainted the Node: %s", out)
	}
	check(run())
	if out, _, _ := kubectl(t, admin, "", "get", "node", "a100-01", "-o", "jsonpath={.spec.taints}"); !strings.Contains(out, `"key":"nvidia.com/gpu"`) {
		t.Errorf("the run left the Node's taints %s", out)
	}
}
