package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// An out/ whose autoscaler MIGs had no autohealing (as a release before
// it rendered them, recorded as nodegen's own): gen and check say that
// its VMs would all be recreated at once and what to do first; with the
// group's autohealing.repair false (the first step) they say nothing, nor
// when out/ already had autohealing.
func TestGenSaysHowToStartAutohealing(t *testing.T) {
	src := testsrc.Copy(t, nil)
	out := filepath.Join(filepath.Dir(src), "out")
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := Main(append(args, "--source", src, "--out", out), strings.NewReader(""), &stdout, &stderr)
		return code, stderr.String()
	}
	const note = "nodegen: MIGs hybrid-ai-autoscaler-us-central1-a, hybrid-ai-autoscaler-us-central1-b start autohealing: their VMs made before it fail the health check"
	if code, stderr := run("gen"); code != 0 || strings.Contains(stderr, "start autohealing") {
		t.Fatalf("first gen: exit %d\n%s", code, stderr)
	}
	withoutHealing := func() {
		t.Helper()
		const rel = "terraform/nodegroup-autoscaler.tf"
		p := filepath.Join(out, rel)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		blocks := regexp.MustCompile(`(?s)\n  # [^\n]*\n(  # [^\n]*\n)*  (auto_healing_policies|instance_lifecycle_policy) \{\n.*?\n  \}\n`)
		old := blocks.ReplaceAll(b, nil)
		if bytes.Contains(old, []byte("auto_healing_policies")) || bytes.Contains(old, []byte("instance_lifecycle_policy")) || bytes.Equal(old, b) {
			t.Fatalf("the autohealing blocks were not all removed:\n%s", old)
		}
		if err := os.WriteFile(p, old, 0o644); err != nil {
			t.Fatal(err)
		}
		// Recorded as written by nodegen, as the earlier release did.
		mp := filepath.Join(out, ".nodegen-manifest.json")
		mb, err := os.ReadFile(mp)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(mb, &m); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(old)
		found := false
		for _, f := range m["files"].([]any) {
			if e := f.(map[string]any); e["path"] == rel {
				e["sha256"], found = hex.EncodeToString(sum[:]), true
			}
		}
		if !found {
			t.Fatalf("%s not in the manifest", rel)
		}
		mb, _ = json.MarshalIndent(m, "", "  ")
		if err := os.WriteFile(mp, append(mb, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	withoutHealing()
	if code, stderr := run("check", "--full"); code != ExitFindings || !strings.Contains(stderr, note) {
		t.Errorf("check: exit %d, want %d and %q in:\n%s", code, ExitFindings, note, stderr)
	}
	if code, stderr := run("gen"); code != 0 || !strings.Contains(stderr, note) {
		t.Errorf("gen: exit %d, want 0 and %q in:\n%s", code, note, stderr)
	}
	if code, stderr := run("gen"); code != 0 || stderr != "" {
		t.Errorf("gen again: exit %d\n%s", code, stderr)
	}

	// The first step: the health check reports, nothing is repaired.
	b, err := os.ReadFile(filepath.Join(src, "autoscaler.cue"))
	if err != nil {
		t.Fatal(err)
	}
	staged := bytes.Replace(b, []byte("\tmin:"), []byte("\tautohealing: repair: false\n\tmin:"), 1)
	if err := os.WriteFile(filepath.Join(src, "autoscaler.cue"), staged, 0o644); err != nil {
		t.Fatal(err)
	}
	withoutHealing()
	if code, stderr := run("gen"); code != 0 || strings.Contains(stderr, "start autohealing") {
		t.Errorf("gen with autohealing.repair false: exit %d\n%s", code, stderr)
	}
}
