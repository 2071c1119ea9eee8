package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/explain"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestShippedGPUCapAgrees renders the shipped example (the tests' fixed
// copy, whose cap the README explains): its rendered --gpu-total, its
// docs, vet's warning and explain's note agree on how many spot T4 nodes
// the cap admits. The number the artifacts imply is
// worked out the autoscaler's way from the artifacts themselves: the cap
// in flags.txt divided by the nvidia.com/gpu the group's kube-env makes
// its template advertise (the autoscaler counts advertised GPUs).
func TestShippedGPUCapAgrees(t *testing.T) {
	src := testsrc.ShippedCopyDir()
	outDir := filepath.Join(t.TempDir(), "out")
	t.Setenv("NODEGEN_CACHE_DIR", t.TempDir())
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"gen", "--source", src, "--out", outDir}, strings.NewReader(""), &out, &errb); code != cli.ExitOK {
		t.Fatalf("gen: exit %d: %s", code, errb.String())
	}
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(outDir, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	m := regexp.MustCompile(`(?m)^--gpu-total=nvidia-tesla-t4:0:([0-9]+)$`).FindSubmatch(read("cluster-autoscaler/flags.txt"))
	if m == nil {
		t.Fatal("flags.txt has no --gpu-total for nvidia-tesla-t4")
	}
	capTotal, _ := strconv.Atoi(string(m[1]))
	tmpl, err := kubeenv.ReadTemplate(read("gce/spot-gpu-t4/kube-env"))
	if err != nil {
		t.Fatal(err)
	}
	per, err := strconv.Atoi(tmpl.ExtendedResources["nvidia.com/gpu"])
	if err != nil || per < 1 {
		t.Fatalf("spot-gpu-t4's kube-env advertises nvidia.com/gpu %q", tmpl.ExtendedResources["nvidia.com/gpu"])
	}
	want := capTotal / per // every other GPU group is at min 0 in the example
	if want >= 12 {
		t.Fatalf("the example's cap %d admits %d spot nodes, all of them: the test needs a cap that binds", capTotal, want)
	}
	n := strconv.Itoa(want)

	if docs := string(read("docs/nodegroups.md")); !strings.Contains(docs, "a node of spot-gpu-t4 counts "+strconv.Itoa(per)+", so the cap admits at most "+n+" of its 12 nodes") {
		t.Errorf("out/docs/nodegroups.md does not say the cap admits %s spot-gpu-t4 nodes", n)
	}

	out.Reset()
	errb.Reset()
	if code := cli.Main([]string{"vet", "--source", src}, strings.NewReader(""), &out, &errb); code != cli.ExitOK {
		t.Fatalf("vet: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "warning: node group spot-gpu-t4 can never reach its max of 12 nodes") || !strings.Contains(errb.String(), ", "+n+" node(s) once") {
		t.Errorf("vet's warning does not say %s spot-gpu-t4 nodes:\n%s", n, errb.String())
	}

	pod := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(pod, []byte(`apiVersion: v1
kind: Pod
metadata: {name: infer}
spec:
  nodeSelector: {nodegen.dev/node-group: spot-gpu-t4}
  tolerations: [{key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}]
  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := cli.Main([]string{"explain", "--source", src, "-f", pod, "-o", "json"}, strings.NewReader(""), &out, &errb); code != cli.ExitOK {
		t.Fatalf("explain: exit %d: %s", code, errb.String())
	}
	var r explain.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, gr := range r.Workloads[0].Groups {
		for _, note := range gr.Notes {
			if gr.Group == "spot-gpu-t4" && strings.Contains(note, "admits at most "+n+" of the group's 12 nodes") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("explain's spot-gpu-t4 notes do not say the cap admits %s nodes:\n%s", n, out.String())
	}
}
