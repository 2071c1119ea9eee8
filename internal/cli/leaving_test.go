package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/outdir"
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
	want := "nodegen: MIG hybrid-ai-gpu-t4-us-central1-b leaves the source: terraform apply refuses to delete it (deletion_policy PREVENT;"
	// The whole order, the autoscaler's helm upgrade (of the values file
	// as --out names it) first.
	order := "nodegen: so, in this order: 1. `helm upgrade --install cluster-autoscaler autoscaler/cluster-autoscaler --version 9.59.0 --namespace kube-system -f " + filepath.ToSlash(out) + "/cluster-autoscaler/values.yaml`: the running autoscaler stops sizing the leaving MIGs"
	order2 := "2. `nodegen rollout --yes`: drains their nodes and deletes the MIGs; 3. terraform apply"
	code, stderr := run("check", "--full")
	for _, w := range []string{want, order, order2} {
		if code != ExitFindings || !strings.Contains(stderr, w) {
			t.Errorf("check: exit %d, want %d and %q in:\n%s", code, ExitFindings, w, stderr)
		}
	}
	if strings.Contains(stderr, "us-central1-a leaves") {
		t.Errorf("check names a MIG that stays:\n%s", stderr)
	}
	code, stderr = run("gen")
	for _, w := range []string{want, order, order2} {
		if code != 0 || !strings.Contains(stderr, w) {
			t.Errorf("gen: exit %d, want 0 and %q in:\n%s", code, w, stderr)
		}
	}
	if code, stderr := run("check", "--full"); code != 0 || stderr != "" {
		t.Errorf("check after gen: exit %d\n%s", code, stderr)
	}
}

// A group renamed in the source: check names its old MIGs as leaving and
// the new group's as new, which only terraform apply makes, so the
// drained pods could not go there before: the new group first, then the
// old one out.
func TestCheckSaysRenamedGroupComesFirst(t *testing.T) {
	src := testsrc.Copy(t, nil)
	out := filepath.Join(filepath.Dir(src), "out")
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := Main(append(args, "--source", src, "--out", out), strings.NewReader(""), &stdout, &stderr)
		return code, stderr.String()
	}
	if code, stderr := run("gen"); code != 0 {
		t.Fatalf("first gen: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(src, "gpu-t4.cue"))
	if err != nil {
		t.Fatal(err)
	}
	const name, renamed = `nodeGroups: "gpu-t4":`, `nodeGroups: "gpu-t4-v2":`
	if !bytes.Contains(b, []byte(name)) {
		t.Fatalf("gpu-t4.cue lacks %s", name)
	}
	if err := os.WriteFile(filepath.Join(src, "gpu-t4.cue"), bytes.Replace(b, []byte(name), []byte(renamed), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := run("check", "--full")
	t.Logf("check: exit %d\n%s", code, stderr)
	for _, want := range []string{
		"nodegen: MIGs hybrid-ai-gpu-t4-us-central1-a, hybrid-ai-gpu-t4-us-central1-b leave the source: terraform apply refuses to delete them (deletion_policy PREVENT",
		"nodegen: MIGs hybrid-ai-gpu-t4-v2-us-central1-a, hybrid-ai-gpu-t4-v2-us-central1-b are new: only terraform apply makes them",
		"add the new group or zone first (gen, terraform apply), then remove the old one",
	} {
		if code != ExitFindings || !strings.Contains(stderr, want) {
			t.Errorf("check: exit %d, want %d and %q", code, ExitFindings, want)
		}
	}
}

// A MIG that leaves the source while the Terraform of out/ gave it no
// deletion_policy (rendered by a nodegen before the guard) is not
// guarded: the state has no policy either, and the message says that
// terraform apply would delete it, not that it refuses. A MIG that only
// changes is neither leaving nor new.
func TestLeavingMIGsWithoutGuard(t *testing.T) {
	mig := func(name string, guarded bool) string {
		s := "resource \"google_compute_instance_group_manager\" \"" + strings.ReplaceAll(name, "-", "_") + "\" {\n  name = \"" + name + "\"\n"
		if guarded {
			s += "  deletion_policy = var.mig_deletion_policy\n"
		}
		return s + "}\n"
	}
	changes := []outdir.Change{
		{Path: "terraform/nodegroup-a.tf", Kind: outdir.Modified,
			Old: []byte(mig("c-a-z1", false) + mig("c-a-z2", false)), New: []byte(mig("c-a-z1", true))},
		{Path: "terraform/nodegroup-b.tf", Kind: outdir.Removed, Old: []byte(mig("c-b-z1", true))},
	}
	m := leavingMIGs(changes)
	if !slices.Equal(m.Trees, []string{""}) {
		t.Errorf("trees %q, want the one-cluster tree alone", m.Trees)
	}
	if want := []string{"c-a-z2", "c-b-z1"}; !slices.Equal(m.Leaving, want) {
		t.Errorf("leaving %v, want %v", m.Leaving, want)
	}
	if want := []string{"c-a-z2"}; !slices.Equal(m.Unguarded, want) {
		t.Errorf("unguarded %v, want %v", m.Unguarded, want)
	}
	if len(m.Added) > 0 {
		t.Errorf("added %v, want none", m.Added)
	}
	var out bytes.Buffer
	sayLeaving(&out, m, func(tree string) string { return "helm upgrade -f " + tree + "values.yaml" })
	t.Logf("%s", out.String())
	for _, want := range []string{
		"nodegen: MIG c-b-z1 leaves the source: terraform apply refuses to delete it",
		"nodegen: MIG c-a-z2 leaves the source and had no deletion_policy in out/ (rendered by an older nodegen), so none in the state either: terraform apply would delete it with its VMs, undrained.",
		"apply once before a zone or group leaves the source",
		"nodegen: so, in this order: 1. `helm upgrade -f values.yaml`: the running autoscaler stops sizing the leaving MIGs",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the message lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "c-a-z2 leaves the source: terraform apply refuses") || strings.Contains(out.String(), "new:") {
		t.Errorf("an unguarded MIG said to be refused, or a MIG said to be new")
	}
}

// A gen into an empty out/ adds every .tf file: no old bytes declared a
// MIG, so none leaves, nothing is said, and none is reported as new
// (Added is what sayLeaving names beside a leaving MIG).
func TestLeavingMIGsNewTree(t *testing.T) {
	changes := []outdir.Change{
		{Path: "terraform/nodegroup-a.tf", Kind: outdir.Added,
			New: []byte("resource \"google_compute_instance_group_manager\" \"c_a_z1\" {\n  name = \"c-a-z1\"\n}\n")},
		{Path: "terraform/main.tf", Kind: outdir.Added, New: []byte("terraform {\n}\n")},
	}
	m := leavingMIGs(changes)
	if len(m.Leaving)+len(m.Unguarded)+len(m.Added) > 0 {
		t.Errorf("leaving %v, unguarded %v, added %v: want none", m.Leaving, m.Unguarded, m.Added)
	}
	var out bytes.Buffer
	sayLeaving(&out, m, func(string) string { t.Fatal("upgrade asked for"); return "" })
	if out.Len() > 0 {
		t.Errorf("said %q", out.String())
	}
}
