package validate_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// example copies the shipped example into a temporary directory, applies
// edits (file name → function of its content; a new file when absent) and
// returns the directory.
func example(t *testing.T, edits map[string]func(string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(testsrc.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(testsrc.Dir(), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, edit := range edits {
		p := filepath.Join(dir, name)
		b, _ := os.ReadFile(p)
		out := edit(string(b))
		if out == string(b) && len(b) > 0 {
			t.Fatalf("edit of %s changed nothing", name)
		}
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

// findings loads dir and returns its findings formatted relative to dir's
// parent.
func findings(t *testing.T, dir string) []string {
	t.Helper()
	_, err := pipeline.Load(dir)
	if err == nil {
		return nil
	}
	var list diag.List
	if !errors.As(err, &list) {
		t.Fatalf("Load: %v", err)
	}
	var out []string
	for _, f := range list {
		out = append(out, f.Format(filepath.Dir(dir)))
	}
	return out
}

func TestExampleIsValid(t *testing.T) {
	if got := findings(t, testsrc.Dir()); len(got) > 0 {
		t.Fatalf("the example has findings:\n%s", strings.Join(got, "\n"))
	}
}

// TestAllAtOnce: CUE errors in one group do not hide the Go rules'
// findings about the others, nor unknown fields in the same group (which
// CUE itself reports only in a struct that has no other error).
func TestAllAtOnce(t *testing.T) {
	dir := example(t, map[string]func(string) string{
		"gpu-t4.cue": func(s string) string {
			s = strings.Replace(s, "bootDiskSizeGb: 200", `bootDiskSizeGb: "big"`, 1)
			return strings.Replace(s, "\tmin:", "\tmaxx: 3\n\tmin:", 1)
		},
		"cpu-burst.cue":  replace("max:         10", "max:         0"),
		"autoscaler.cue": replace(`"example.com/role"`, `"node-role.kubernetes.io/autoscaler"`),
		"cluster.cue":    replace(`expander:                         "least-waste"`, `expander: "least-wasted"`),
	})
	want := []string{
		`nodegroups/autoscaler.cue:11:10: nodeGroups.autoscaler.labels."node-role.kubernetes.io/autoscaler": label "node-role.kubernetes.io/autoscaler" is in a kubernetes.io/k8s.io namespace the kubelet may not set on itself: the kubelet refuses to start with it (and NodeRestriction rejects it); use your own prefix, e.g. "example.com/autoscaler"`,
		`nodegroups/cluster.cue:19:13: cluster.autoscaler.expander: unknown expander "least-wasted"; did you mean "least-waste"?`,
		`nodegroups/cpu-burst.cue:9:15: nodeGroups."cpu-burst".max: max must be at least 1 for an autoscaled group (the autoscaler rejects max 0)`,
		`nodegroups/gpu-t4.cue:8:18: nodeGroups."gpu-t4".bootDiskSizeGb: want an int, not a string ("big")`,
		`nodegroups/gpu-t4.cue:9:2: nodeGroups."gpu-t4".maxx: field not allowed; did you mean max?`,
	}
	if got := findings(t, dir); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSecrets(t *testing.T) {
	dir := example(t, map[string]func(string) string{
		"secrets.cue": func(string) string {
			return `// old join command: kubeadm join --token abcdef.0123456789abcdef
nodeGroups: "cpu-burst": description: """
	key:
	-----BEGIN EC PRIVATE KEY-----
	MHcCAQEE
	-----END EC PRIVATE KEY-----
	"""
nodeGroups: "cpu-burst": labels: "example.com/x": "z9y8x7.a1b2c3d4e5f6a7b8"
`
		},
	})
	got := strings.Join(findings(t, dir), "\n")
	for _, want := range []string{
		`nodegroups/secrets.cue:1:43: nodeGroups: a kubeadm bootstrap token (abcd… sha256:a4b8b245) must not be in the source`,
		`nodegroups/secrets.cue:4:2: nodeGroups."cpu-burst".description: a private key (EC PRIVATE KEY, sha256:90064aa5) must not be in the source`,
		`nodegroups/secrets.cue:8:52: nodeGroups."cpu-burst".labels."example.com/x": a kubeadm bootstrap token (z9y8… sha256:f121ffa2)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no finding %q in:\n%s", want, got)
		}
	}
	for _, secret := range []string{"0123456789abcdef", "a1b2c3d4e5f6a7b8", "MHcCAQEE"} {
		if strings.Contains(got, secret) {
			t.Errorf("the findings repeat the secret %q:\n%s", secret, got)
		}
	}
}

func TestNoFalseSecrets(t *testing.T) {
	dir := example(t, map[string]func(string) string{
		"cpu-burst.cue": replace(`description: "Cloud CPU burst workers"`,
			// A DNS name, a longer token-like word and a public key are fine.
			`description: "api.abcdefg.0123456789abcdef and x-abcdef.0123456789abcdefg -----BEGIN PUBLIC KEY-----"`),
	})
	if got := findings(t, dir); len(got) > 0 {
		t.Errorf("findings:\n%s", strings.Join(got, "\n"))
	}
}

func TestDuplicateGroups(t *testing.T) {
	dir := example(t, map[string]func(string) string{
		// Compatible with gpu-t4.cue: CUE alone would merge it silently.
		"more.cue": func(string) string { return "nodeGroups: {\n\t\"gpu-t4\": labels: \"example.com/extra\": \"yes\"\n}\n" },
	})
	want := []string{
		`nodegroups/gpu-t4.cue:2:13: nodeGroups."gpu-t4": node group "gpu-t4" is also defined at more.cue:2:2; CUE would merge the definitions into one group: give each group one definition and a name of its own`,
		`nodegroups/more.cue:2:2: nodeGroups."gpu-t4": node group "gpu-t4" is also defined at gpu-t4.cue:2:13; CUE would merge the definitions into one group: give each group one definition and a name of its own`,
	}
	if got := findings(t, dir); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
