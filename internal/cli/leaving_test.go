package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// A zone removed from a group takes its MIG out of the rendered
// Terraform: check and gen say that terraform apply refuses to delete it
// and that nodegen rollout is what to run first; once out/ is up to date,
// check is clean and says nothing of it.
func TestCheckAndGenSayWhatToRunBeforeApply(t *testing.T) {
	src := testsrc.Copy(t, nil)
	out := filepath.Join(filepath.Dir(src), "out")
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := Main(append(args, "--source", src, "--out", out), strings.NewReader(""), &stdout, &stderr)
		return code, stderr.String()
	}
	if code, stderr := run("gen"); code != 0 || strings.Contains(stderr, "leaves the source") {
		t.Fatalf("first gen: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(src, "gpu-t4.cue"))
	if err != nil {
		t.Fatal(err)
	}
	const zones, zoneA = `zones: ["us-central1-a", "us-central1-b"]`, `zones: ["us-central1-a"]`
	if !bytes.Contains(b, []byte(zones)) {
		t.Fatalf("gpu-t4.cue lacks %s", zones)
	}
	if err := os.WriteFile(filepath.Join(src, "gpu-t4.cue"), bytes.Replace(b, []byte(zones), []byte(zoneA), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "nodegen: MIG hybrid-ai-gpu-t4-us-central1-b leaves the source: terraform apply refuses to delete it (deletion_policy PREVENT); run `nodegen rollout --yes` first"
	code, stderr := run("check", "--full")
	if code != ExitFindings || !strings.Contains(stderr, want) {
		t.Errorf("check: exit %d, want %d and %q in:\n%s", code, ExitFindings, want, stderr)
	}
	if strings.Contains(stderr, "us-central1-a leaves") {
		t.Errorf("check names a MIG that stays:\n%s", stderr)
	}
	if code, stderr := run("gen"); code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("gen: exit %d, want 0 and %q in:\n%s", code, want, stderr)
	}
	if code, stderr := run("check", "--full"); code != 0 || stderr != "" {
		t.Errorf("check after gen: exit %d\n%s", code, stderr)
	}
}
