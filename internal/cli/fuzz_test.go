package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// positioned matches a finding printed as file:line:col: …
var positioned = regexp.MustCompile(`(?m)^[^:\n]+\.cue:\d+:\d+: `)

// FuzzVetGen mutates one file of the tests' copy of the example and holds
// nodegen to its promise: when vet accepts the source, gen succeeds (its
// verification of every artifact passes); when vet rejects it, it reports
// at least one positioned finding, never an internal error, and gen leaves
// an existing out/ untouched.
func FuzzVetGen(f *testing.F) {
	entries, err := os.ReadDir(testsrc.Dir())
	if err != nil {
		f.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		b, err := os.ReadFile(filepath.Join(testsrc.Dir(), e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(len(names)-1), string(b))
	}
	// Seeds near the classes vet must catch.
	f.Add(uint8(2), `nodeGroups: "cpu-burst": {kind: "gce", zones: ["us-central1-a"], machineType: "n2-standard-8", image: "img", min: 0, max: 3, taints: [{key: "ignore-taint.cluster-autoscaler.kubernetes.io/x", effect: "NoSchedule"}]}`)
	f.Add(uint8(2), `nodeGroups: "cpu-burst": {kind: "gce", zones: ["us-central1-a"], machineType: "t2a-standard-8", image: "img", min: 0, max: 99999999999999999999}`)
	// A fleet's top level in the one-cluster source: mixing the forms, a
	// mesh without a fleet.
	f.Add(uint8(2), `clusters: x: {cluster: name: "x", nodeGroups: {}}`)
	f.Add(uint8(2), `mesh: {id: "m", clusters: x: {role: "primary", network: "n", eastWestGateway: nodeGroup: "cpu-burst"}}`)
	f.Fuzz(func(t *testing.T, which uint8, content string) {
		name := names[int(which)%len(names)]
		root := t.TempDir()
		dir := testsrc.Copy(t, nil)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		run := func(args ...string) (int, string) {
			var out, errb bytes.Buffer
			code := cli.Main(args, strings.NewReader(""), &out, &errb)
			return code, errb.String()
		}
		code, stderr := run("vet", "--source", dir)
		if strings.Contains(stderr, "internal error") {
			t.Fatalf("vet: internal error:\n%s", stderr)
		}
		out := filepath.Join(root, "out")
		switch code {
		case cli.ExitOK:
			if gcode, gerr := run("gen", "--source", dir, "--out", out); gcode != cli.ExitOK {
				t.Fatalf("vet accepts the source but gen exits %d:\n%s\nsource %s:\n%s", gcode, gerr, name, content)
			}
		case cli.ExitFindings:
			if !positioned.MatchString(stderr) {
				t.Fatalf("vet rejects the source without a positioned finding:\n%s\nsource %s:\n%s", stderr, name, content)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(out, "kept")
			if err := os.WriteFile(marker, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			gcode, gerr := run("gen", "--source", dir, "--out", out)
			if gcode != cli.ExitFindings || strings.Contains(gerr, "internal error") {
				t.Fatalf("vet rejects the source but gen exits %d:\n%s", gcode, gerr)
			}
			if ents, _ := os.ReadDir(out); len(ents) != 1 {
				t.Fatalf("gen on a rejected source changed out/: %d entries", len(ents))
			}
		default:
			t.Fatalf("vet exits %d:\n%s", code, stderr)
		}
	})
}
