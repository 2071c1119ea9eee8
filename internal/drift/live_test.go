package drift_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/drift"
	"github.com/nodegen/nodegen/internal/kube"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodecheck"
	"github.com/nodegen/nodegen/internal/revision"
	"github.com/nodegen/nodegen/internal/testing/testcp"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// The recorded nodes, created in a real API server and read back live
// through client-go, give the same results as the same nodes read from
// real `kubectl get nodes -o json` output; and `nodegen drift --kubeconfig`
// reports them.
func TestCheckNodesOfLive(t *testing.T) {
	cp := testcp.Start(t)
	src, files := testsrc.Example(t)
	revisions := map[string]string{}
	for _, g := range src.CloudGroups() {
		rev, ok, err := revision.FromKubeEnv(files[layout.KubeEnvPath(g.Name)])
		if err != nil || !ok {
			t.Fatalf("node group %s: its kube-env declares no revision (%v)", g.Name, err)
		}
		revisions[g.Name] = rev
	}

	// Create the recorded nodes (without server-set metadata), then set
	// their status, which create ignores. The cloud nodes of a group were
	// made from its current artifacts: they carry its revision.
	fixture := readFixtureNodes(t)
	for i := range fixture {
		n := fixture[i].DeepCopy()
		n.ResourceVersion, n.UID, n.CreationTimestamp = "", "", metav1.Time{}
		if rev, ok := revisions[n.Labels[model.GroupLabel]]; ok {
			n.Labels[model.RevisionLabel] = rev
		}
		status := n.Status
		n.Status = corev1.NodeStatus{}
		writeJSON(t, filepath.Join(cp.Dir, "node.json"), n)
		if _, _, err := cp.Kubectl(t, "create", "-f", filepath.Join(cp.Dir, "node.json")); err != nil {
			t.Fatal(err)
		}
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"capacity": status.Capacity, "allocatable": status.Allocatable}})
		if _, _, err := cp.Kubectl(t, "patch", "node", n.Name, "--subresource=status", "--type=merge", "-p", string(patch)); err != nil {
			t.Fatal(err)
		}
	}

	client, err := kube.FromKubeconfig(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// Every node was created just now: none is stuck yet, so the stuck GPU
	// node of the recording is merely initialising here.
	opts := nodecheck.Options{Now: time.Now(), StuckAfter: 30 * time.Minute}
	defer drift.SetListPageSize(3)() // 8 nodes: three pages
	live, unmanaged, err := drift.CheckNodesOf(context.Background(), src, client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(unmanaged) != 0 {
		t.Errorf("unmanaged %v, want none (cp-1 lacks its providerID)", unmanaged)
	}
	for _, r := range live {
		want := expectedFixture[r.Name]
		if r.Name == "hybrid-ai-gpu-t4-r8zn" {
			want.findings = []string{}
		}
		if r.Group != want.group || !slices.Equal(findingKeys(r.Findings), want.findings) {
			t.Errorf("live %s: group %q findings %v, want %q %v", r.Name, r.Group, findingKeys(r.Findings), want.group, want.findings)
		}
	}
	if len(live) != len(expectedFixture) {
		t.Errorf("%d live results, want %d", len(live), len(expectedFixture))
	}
	// The API server's admission gave every node the not-ready taint: a
	// transient taint, not drift (checked above). Make sure it is there.
	out, _, err := cp.Kubectl(t, "get", "nodes", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"key": "node.kubernetes.io/not-ready"`) {
		t.Error("no node.kubernetes.io/not-ready taint in the live nodes; the transient-taint case is not exercised")
	}
	fromFile, err := drift.ReadNodes("kubectl.json", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	results, unmanagedFile := nodecheck.Check(src, fromFile, opts)
	if !reflect.DeepEqual(results, live) || !slices.Equal(unmanaged, unmanagedFile) {
		t.Errorf("kubectl output and live listing disagree:\nfile %+v\nlive %+v", results, live)
	}

	// The CLI's live path.
	var stdout, stderr bytes.Buffer
	code := cli.Main([]string{"drift", "--source", testsrc.Dir(), "--kubeconfig", cp.Kubeconfig}, strings.NewReader(""), &stdout, &stderr)
	if code != cli.ExitFindings {
		t.Errorf("exit %d, want %d; stderr: %s", code, cli.ExitFindings, stderr.String())
	}
	for _, want := range []string{
		"hybrid-ai-gpu-t4-m2pq     gpu-t4      label cloud.google.com/gke-accelerator missing (want nvidia-tesla-t4)",
		"hybrid-ai-cpu-burst-x7k2  cpu-burst   ok",
		"onprem-a100-01            onprem-gpu  no providerID: the Cluster Autoscaler's GCE provider fails on it, so v1.35.2 scales nothing, up or down (kubernetes/autoscaler#10140); run out/onprem/set-provider-id.sh",
		"cp-1                      -           no providerID: ",
		"drift: 5 of 8 nodes differ from the source\n",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("drift --kubeconfig output lacks %q:\n%s", want, stdout.String())
		}
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
