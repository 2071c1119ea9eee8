package k8s

import (
	"bytes"
	"strconv"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/templates"
)

// The approver's script (templates/node-csr-approver.sh, shipped as it is
// in a ConfigMap) names the signer it approves for, the reasons it writes
// and its default pause; the Go side renders the RBAC, the admission
// policy and the Deployment with the same facts (this package's constants).
// Each is decided in the Go constants; this holds the script's copies
// equal to them, read from the script's syntax tree.
func TestApproverScriptFacts(t *testing.T) {
	script, err := templates.FS.ReadFile("node-csr-approver.sh")
	if err != nil {
		t.Fatal(err)
	}
	f, err := syntax.NewParser().Parse(bytes.NewReader(script), "node-csr-approver.sh")
	if err != nil {
		t.Fatal(err)
	}
	readonly := map[string]string{}
	defaults := map[string]string{}
	for _, st := range f.Stmts {
		switch c := st.Cmd.(type) {
		case *syntax.DeclClause:
			if c.Variant.Value != "readonly" {
				continue
			}
			for _, a := range c.Args {
				if a.Name != nil && a.Value != nil {
					readonly[a.Name.Value] = wordValue(a.Value)
				}
			}
		case *syntax.CallExpr:
			// NAME="${NAME:-default}"
			for _, a := range c.Assigns {
				if a.Value == nil || len(a.Value.Parts) != 1 {
					continue
				}
				dq, ok := a.Value.Parts[0].(*syntax.DblQuoted)
				if !ok || len(dq.Parts) != 1 {
					continue
				}
				if pe, ok := dq.Parts[0].(*syntax.ParamExp); ok && pe.Param.Value == a.Name.Value && pe.Exp != nil && pe.Exp.Op == syntax.DefaultUnsetOrNull && pe.Exp.Word != nil {
					defaults[a.Name.Value] = pe.Exp.Word.Lit()
				}
			}
		}
	}
	for name, want := range map[string]string{
		"SIGNER":          model.KubeletClientSigner,
		"REASON_APPROVED": model.CSRReasonApproved,
		"REASON_DENIED":   model.CSRReasonDenied,
	} {
		if got, ok := readonly[name]; !ok || got != want {
			t.Errorf("the script's readonly %s is %q (declared: %v), the Go constant %q", name, got, ok, want)
		}
	}
	if got := defaults["POLL_SECONDS"]; got != strconv.Itoa(nodeCSRApproverPoll) {
		t.Errorf("the script's POLL_SECONDS defaults to %q, nodeCSRApproverPoll is %d", got, nodeCSRApproverPoll)
	}
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
