package terraform_test

import (
	"github.com/nodegen/nodegen/internal/testing/tfschema"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/verify"
)

// TestTerraformDescriptionInjection: a node group's description is free
// text. Written raw into a comment, a line break in it ended the comment
// and the rest became live HCL of the user's module (here an IAM grant of
// roles/owner). Whatever the description, the module's blocks and
// attributes are those of a plain description, and the description is
// still there for people to read.
func TestTerraformDescriptionInjection(t *testing.T) {
	_, plain := testsrc.Spec{GPUDescription: "x"}.MustRender(t)
	want := tfschema.Blocks(t, plain)
	payload := "GPU workers\n" +
		"resource \"google_project_iam_member\" \"pwn\" {\n" +
		"  project = \"acme-hybrid-ai\"\n" +
		"  role    = \"roles/owner\"\n" +
		"  member  = \"user:mallory@example.com\"\n" +
		"}\n" +
		"# "
	for name, desc := range map[string]string{
		"injected resource":     payload,
		"CRLF":                  strings.ReplaceAll(payload, "\n", "\r\n"),
		"bare CR":               strings.ReplaceAll(payload, "\n", "\r"),
		"benign multi-line":     "Cloud T4 GPU burst workers\nfor the nightly training jobs",
		"unicode line break":    "a\u2028resource \"x\" \"y\" {}\u2029b\u0085c",
		"template and comments": "${file(\"/etc/passwd\")} %{ if true }x%{ endif } /* */ // # \"quoted\" \\",
	} {
		t.Run(name, func(t *testing.T) {
			src, files := testsrc.Spec{GPUDescription: desc}.MustRender(t)
			got := tfschema.Blocks(t, files)
			for _, p := range slices.Sorted(maps.Keys(want)) {
				if !slices.Equal(got[p], want[p]) {
					t.Errorf("%s: blocks and attributes\n%s\nwant those of a plain description\n%s",
						p, strings.Join(got[p], "\n"), strings.Join(want[p], "\n"))
				}
			}
			for _, p := range files.Paths() {
				if strings.HasSuffix(p, ".tf") && strings.Contains(string(files[p]), "roles/owner\"\n") {
					t.Errorf("%s carries the injected grant as HCL:\n%s", p, files[p])
				}
			}
			if err := verify.All(src, files); err != nil {
				t.Errorf("gen's verification rejects the output: %v", err)
			}
			// The comment still says what the group is, in one line.
			gp := layout.TerraformGroupPath("gpu-t4")
			if !strings.Contains(string(files[gp]), "# Node group gpu-t4 (gce: \"") {
				t.Errorf("%s lost the group's description comment:\n%s", gp, files[gp])
			}
		})
	}
}
