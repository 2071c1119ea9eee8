package k8s

import (
	"bytes"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/templates"
)

// The approver's script (templates/node-csr-approver.sh, shipped as it is
// in a ConfigMap) names the signer it approves for and the reasons it
// writes; the Go side renders the RBAC and the admission policy with the
// same facts (this package's constants).
// Each is decided in the Go constants; this holds the script's copies
// equal to them, read from the script's syntax tree.
func TestApproverScriptFacts(t *testing.T) {
	readonly := scriptReadonly(t, "node-csr-approver.sh")
	for name, want := range map[string]string{
		"SIGNER":          model.KubeletClientSigner,
		"REASON_APPROVED": model.CSRReasonApproved,
		"REASON_DENIED":   model.CSRReasonDenied,
	} {
		if got, ok := readonly[name]; !ok || got != want {
			t.Errorf("the script's readonly %s is %q (declared: %v), the Go constant %q", name, got, ok, want)
		}
	}
}

// The taint remover's script (templates/taint-remover.sh) looks for the
// GPU Operator's validation files in its constant VALIDATIONS_DIR; its
// DaemonSet mounts the node's model.GPUValidationsDir at that path.
func TestTaintRemoverScriptFacts(t *testing.T) {
	got, ok := scriptReadonly(t, "taint-remover.sh")["VALIDATIONS_DIR"]
	if !ok || got != model.GPUValidationsDir {
		t.Errorf("the script's readonly VALIDATIONS_DIR is %q (declared: %v), the DaemonSet mounts %q", got, ok, model.GPUValidationsDir)
	}
	l, err := source.Load("../../testing/testsrc/testdata/nodegroups")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := taintRemoverObjects(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		ds, ok := o.(*appsv1.DaemonSet)
		if !ok {
			continue
		}
		n++
		spec := ds.Spec.Template.Spec
		found := false
		for _, m := range spec.Containers[0].VolumeMounts {
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.HostPath != nil && v.HostPath.Path == model.GPUValidationsDir && m.MountPath == got {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("DaemonSet %s mounts no hostPath %s at %s", ds.Name, model.GPUValidationsDir, got)
		}
	}
	if n == 0 {
		t.Fatal("the test source renders no taint-remover DaemonSet")
	}
}

// scriptReadonly returns the top-level readonly NAME=VALUE constants of
// the shipped script name, read from its syntax tree.
func scriptReadonly(t *testing.T, name string) map[string]string {
	t.Helper()
	script, err := templates.FS.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := syntax.NewParser().Parse(bytes.NewReader(script), name)
	if err != nil {
		t.Fatal(err)
	}
	readonly := map[string]string{}
	for _, st := range f.Stmts {
		if c, ok := st.Cmd.(*syntax.DeclClause); ok && c.Variant.Value == "readonly" {
			for _, a := range c.Args {
				if a.Name != nil && a.Value != nil {
					readonly[a.Name.Value] = wordValue(a.Value)
				}
			}
		}
	}
	return readonly
}

// wordValue is the value of a word of literals and single-quoted parts.
func wordValue(w *syntax.Word) string {
	var b bytes.Buffer
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		}
	}
	return b.String()
}
