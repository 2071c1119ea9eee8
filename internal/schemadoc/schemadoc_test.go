package schemadoc_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"

	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/schemadoc"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/schema"
)

// schemaFields parses schema/nodegen.cue as text (not through the
// evaluator schemadoc uses) and returns the label and comment of every
// field declared inside a definition.
func schemaFields(t *testing.T) map[string][]string {
	t.Helper()
	f, err := parser.ParseFile(schema.Filename, schema.Source, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, decl := range f.Decls {
		def, ok := decl.(*ast.Field)
		if !ok {
			continue
		}
		ast.Walk(def.Value, func(n ast.Node) bool {
			fld, ok := n.(*ast.Field)
			if !ok {
				return true
			}
			name, _, err := ast.LabelName(fld.Label)
			if err != nil {
				if _, pattern := fld.Label.(*ast.ListLit); !pattern {
					t.Fatalf("label %v: %v", fld.Label, err)
				}
				return true
			}
			doc := ""
			for _, cg := range ast.Comments(fld) {
				if cg.Doc {
					doc += strings.Join(strings.Fields(cg.Text()), " ")
				}
			}
			out[name] = append(out[name], doc)
			return true
		}, nil)
	}
	return out
}

func label(path string) string {
	if strings.HasSuffix(path, `"`) {
		i := strings.LastIndex(path[:len(path)-1], `"`)
		return path[i:]
	}
	i := strings.LastIndexAny(path, ".]")
	return path[i+1:]
}

// underOptional reports whether an ancestor of f is optional: f is then
// required only once the ancestor is written.
func underOptional(s *schemadoc.Schema, f schemadoc.Field) bool {
	for _, a := range s.Fields {
		if a.Optional && strings.HasPrefix(f.Path, a.Path) && len(f.Path) > len(a.Path) && strings.ContainsRune(".[", rune(f.Path[len(a.Path)])) {
			return true
		}
	}
	return false
}

// TestEveryFieldInReference checks the reference against the schema's
// text: every field declared in a definition has an entry whose comment
// is the field's own comment, and every entry has a comment.
func TestEveryFieldInReference(t *testing.T) {
	s, err := schemadoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	ref := string(s.Reference())
	byLabel := map[string][]schemadoc.Field{}
	for _, f := range s.Fields {
		name := label(f.Path)
		if uq, err := strconv.Unquote(name); err == nil {
			name = uq
		}
		byLabel[name] = append(byLabel[name], f)
		if f.Doc == "" {
			t.Errorf("%s has no comment in the schema", f.Path)
		}
		if !strings.Contains(ref, "### `"+f.Path+"`\n\n"+f.Facts()+"\n\n"+f.Doc+"\n") {
			t.Errorf("the reference lacks %s with its facts and comment", f.Path)
		}
	}
	fields := schemaFields(t)
	if len(fields) < 40 {
		t.Fatalf("found only %d field labels in the schema text", len(fields))
	}
	for name, docs := range fields {
		entries := byLabel[name]
		if len(entries) == 0 {
			t.Errorf("schema field %q is not in the reference", name)
			continue
		}
		for _, doc := range docs {
			if doc == "" {
				continue
			}
			found := false
			for _, e := range entries {
				found = found || e.Doc == doc
			}
			if !found {
				t.Errorf("schema field %q: comment %q is in no reference entry", name, doc)
			}
		}
	}
	for _, d := range []string{"#Name", "#Duration"} {
		if !strings.Contains(ref, "### `"+d+"`") {
			t.Errorf("the reference lacks the type %s", d)
		}
	}
}

// minimal is a source that writes only what the reference calls required
// (for a cluster, a gce group and a gce-static group: some fields exist
// for one kind only).
const minimal = `
cluster: {
	name:                 "c"
	kubernetesVersion:    "1.35.0"
	controlPlaneEndpoint: "10.0.0.1:6443"
	caCertHashes: ["sha256:` + "0000000000000000000000000000000000000000000000000000000000000000" + `"]
	joinToken: metadataKey: "join-token"
	gcp: {project: "my-project-1", region: "europe-west4"}
	autoscaler: nodeGroup: "g"
}
nodeGroups: g: {
	kind: "gce"
	zones: ["europe-west4-a"]
	machineType: "n2-standard-4"
	image:       "projects/p/global/images/family/f"
	min:         0
	max:         3
}
nodeGroups: s: {
	kind: "gce-static"
	zones: ["europe-west4-a"]
	machineType: "n2-standard-4"
	image:       "projects/p/global/images/family/f"
	min:         1
	max:         1
}
`

// TestDefaultsAndRequired loads a source that writes exactly the fields
// the reference marks required and checks that every field with a
// documented default resolves to that default.
func TestDefaultsAndRequired(t *testing.T) {
	s, err := schemadoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "src.cue"), []byte(minimal), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := source.Load(dir)
	if err != nil {
		t.Fatalf("a source with the required fields only: %v", err)
	}
	written := strings.Join(strings.Fields(minimal), " ")
	n := 0
	for _, f := range s.Fields {
		if underOptional(s, f) || strings.Contains(f.Path, "[]") {
			continue
		}
		if f.Required {
			if !strings.Contains(written, label(f.Path)+":") {
				t.Errorf("%s is marked required but the minimal source loads without it", f.Path)
			}
		}
		if f.Default == "" {
			continue
		}
		v := l.Value.LookupPath(cue.ParsePath(strings.ReplaceAll(f.Path, schemadoc.GroupKey, "g")))
		if !v.Exists() {
			v = l.Value.LookupPath(cue.ParsePath(strings.ReplaceAll(f.Path, schemadoc.GroupKey, "s")))
		}
		if !v.Exists() {
			t.Errorf("%s: not in the loaded source", f.Path)
			continue
		}
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		var want any
		if err := json.Unmarshal([]byte(f.Default), &want); err != nil {
			t.Fatalf("%s: default %s is not JSON: %v", f.Path, f.Default, err)
		}
		wantJSON, _ := json.Marshal(want)
		if string(got) != string(wantJSON) {
			t.Errorf("%s resolves to %s, the reference says the default is %s", f.Path, got, f.Default)
		}
		n++
	}
	if n < 15 {
		t.Errorf("only %d defaults checked", n)
	}
}

// TestKinds checks that fields the schema declares only for cloud groups
// say so, and that fields of every kind do not.
func TestKinds(t *testing.T) {
	s, err := schemadoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.GroupKinds, ","); got != "gce,gce-static,onprem" {
		t.Errorf("group kinds %s", got)
	}
	for path, cloudOnly := range map[string]bool{
		"nodeGroups.<name>.zones":  true,
		"nodeGroups.<name>.min":    true,
		"nodeGroups.<name>.labels": false,
		"nodeGroups.<name>.gpu":    false,
	} {
		f := s.Field(path)
		if f == nil {
			t.Errorf("no field %s", path)
			continue
		}
		if got := strings.Join(f.Kinds, ","); (got == "gce,gce-static") != cloudOnly || (!cloudOnly && got != "") {
			t.Errorf("%s: kinds %q", path, got)
		}
	}
}

// vetMinimal is the smallest source vet accepts: the reference's required
// fields, and (marked with a comment) what a rule across fields needs.
const vetMinimal = `
cluster: {
	name:                 "c"
	kubernetesVersion:    "1.35.2"
	controlPlaneEndpoint: "10.0.0.1:6443"
	caCertHashes: ["sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d"]
	joinToken: metadataKey: "join-token"
	gcp: {project: "my-project-1", region: "europe-west4"}
	autoscaler: nodeGroup: "g"
}
nodeGroups: g: {
	kind: "gce-static" // the autoscaler's group is gce-static
	zones: ["europe-west4-a", "europe-west4-b"]
	machineType: "n2-standard-4"
	image:       "projects/my-project-1/global/images/family/k8s-node-1-35"
	min:         1 // the autoscaler's group has a node
	max:         1
	taints: [{key: "example.com/autoscaler", value: "only", effect: "NoSchedule"}] // the autoscaler's group is tainted
}
`

// TestRequiredMatchesVet: the reference's "required" is what vet needs.
// vetMinimal passes vet; every field it writes (but those a rule across
// fields needs) is one the reference marks required; and without any one
// of them vet refuses it.
func TestRequiredMatchesVet(t *testing.T) {
	s, err := schemadoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	valid := vetMinimal
	vet := func(text string) error {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "src.cue"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := pipeline.Load(dir)
		return err
	}
	if err := vet(valid); err != nil {
		t.Fatalf("vet refuses the source of the reference's required fields:\n%v", err)
	}
	lines := strings.Split(valid, "\n")
	block := ""
	n := 0
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "cluster: {"):
			block = "cluster."
			continue
		case strings.HasPrefix(line, "nodeGroups: g: {"):
			block = "nodeGroups." + schemadoc.GroupKey + "."
			continue
		case !strings.HasPrefix(line, "\t"):
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSpace(line), ":")
		path := block + name
		if strings.Contains(line, "//") {
			continue // a rule across fields needs it
		}
		f := s.Field(path)
		if f == nil {
			t.Errorf("the minimal source writes %s, which the reference lacks", path)
			continue
		}
		if !f.Required {
			t.Errorf("the reference marks %s %s, but the minimal source needs it: vet's rules need it, so mark it required", path, f.Facts())
		}
		without := strings.Join(append(slices.Clone(lines[:i]), lines[i+1:]...), "\n")
		if err := vet(without); err == nil {
			t.Errorf("vet accepts the minimal source without %s, which the reference marks required", path)
		}
		n++
	}
	if n < 10 {
		t.Errorf("only %d fields checked", n)
	}
}
