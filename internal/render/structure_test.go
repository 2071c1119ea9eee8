package render_test

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/nodegen/nodegen/internal/testing/tfschema"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/yuin/goldmark"
	mdast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"go.yaml.in/yaml/v3"
	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// The property behind the targets below: no value a user may write into
// a free-text or user-named field of the source changes the structure of
// any artifact. Each target renders the test's source twice, once with a
// fuzzed value in one field and once with a plain value in the same field,
// reads each artifact with its language's own parser and compares the
// structure: HCL blocks and attribute names (hclparse), YAML documents and
// keys, the bash syntax tree's node types (mvdan.cc/sh), Markdown blocks,
// table shapes and Mermaid statements (goldmark, GFM). Values nodegen
// rejects (schema or Go rules) are skipped: they never reach a renderer.

// structField is one free-text or user-named field of the source.
type structField struct {
	name  string
	plain string // a value nodegen accepts, with no special character
	set   func(*testsrc.Spec, string)
}

var structFields = []structField{
	{"GPU group description", "x", func(s *testsrc.Spec, v string) { s.GPUDescription = v }},
	{"gce-static group description", "x", func(s *testsrc.Spec, v string) { s.StaticDescription = v }},
	{"onprem group description", "x", func(s *testsrc.Spec, v string) { s.OnPremDescription = v }},
	{"image", "projects/acme-images/global/images/x", func(s *testsrc.Spec, v string) { s.Image = v }},
	{"taint remover image", "example.com/x:1", func(s *testsrc.Spec, v string) { s.TaintRemoverImage = v }},
	{"label value", "x", func(s *testsrc.Spec, v string) { s.LabelValue = v }},
	{"taint value", "x", func(s *testsrc.Spec, v string) { s.TaintValue = v }},
	{"join secret name", "x", func(s *testsrc.Spec, v string) { s.Secret = v }},
	{"join metadata key", "x", func(s *testsrc.Spec, v string) { s.MetadataKey = v }},
	// Names, not values: they reach every artifact's header and the docs.
	{"source directory name", "x", func(s *testsrc.Spec, v string) { s.DirName = v }},
	{"group file name", "x", func(s *testsrc.Spec, v string) { s.GPUFile = v }},
}

// structSeeds are values that broke, or could break, some artifact's
// syntax: line breaks, quotes, template and shell expansions, Markdown and
// Mermaid markup.
var structSeeds = []string{
	"x\nresource \"google_project_iam_member\" \"pwn\" {\n  role = \"roles/owner\"\n}\n#",
	"a\r\nb\rc\u2028d\u0085e",
	"${file(\"/etc/passwd\")} %{ if true }x%{ endif }",
	"$(reboot) `id` ${HOME} '\"' \\",
	"x\n\n# Heading\n\n| a | b |\n|---|---|\n| c | d |\n\n```\ncode\n",
	"# h", "- item", "1. item", "> quote", "    indented", "---", "[x]: https://example.com", "<div>", "`code`", "a|b",
	"x;y%%z#1 --> y[\"q\"]\nparticipant Z",
	"key: value\n- list\n--- \n...",
	"registry.example.com/img@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	"a-b_c.D1", "",
	"a|b`c<script>alert(1)</script>", "x\"] --> x[\"y", "a-->b", "a*/b", "ng\rKUBE_X: y", "ng\nKUBE_X: y", "\x00",
}

// addStructSeeds gives a fuzz target each seed in one field (in turn) and
// the first seed in every field; TestStructureSeeds runs every seed in
// every field for all artifacts.
func addStructSeeds(f *testing.F) {
	for i, s := range structSeeds {
		f.Add(uint8(i%len(structFields)), s)
	}
	for i := range structFields {
		f.Add(uint8(i), structSeeds[0])
	}
}

// TestStructureSeeds: every seed in every field leaves the structure of
// every artifact as it is.
func TestStructureSeeds(t *testing.T) {
	for i := range structFields {
		for _, s := range structSeeds {
			compareStructure(t, uint8(i), s, isTerraform, hclSkeleton)
			compareStructure(t, uint8(i), s, isYAML, yamlSkeleton)
			compareStructure(t, uint8(i), s, isScript, bashSkeleton)
			compareStructure(t, uint8(i), s, isMarkdown, markdownSkeleton)
		}
	}
}

// fuzzing is set by the fuzz targets: they check values on the fast path
// (structure_fast_test.go), the tests through the loader.
var fuzzing bool

// plainRenders caches the render with each field's plain value.
var plainRenders sync.Map // field index -> layout.Files

// fuzzedRenders caches the renders of the seeds by field and value, so
// the four targets' seeds load each source once per test binary.
var fuzzedRenders sync.Map // structKey -> layout.Files (nil: rejected)

type structKey struct {
	field int
	value string
}

// structPair renders the source with value in field i and with the field's
// plain value. ok is false when nodegen rejects value.
func structPair(t *testing.T, i uint8, value string) (fuzzed, plain layout.Files, ok bool) {
	t.Helper()
	fld := structFields[int(i)%len(structFields)]
	key := structKey{int(i) % len(structFields), value}
	if fuzzing {
		if src := fastSource(t, key.field, value); src != nil {
			var err error
			if fuzzed, err = render.All(src); err != nil {
				t.Fatalf("%s %q: nodegen accepts the source but cannot render it: %v", fld.name, value, err)
			}
		}
	} else if c, ok := fuzzedRenders.Load(key); ok {
		fuzzed = c.(layout.Files)
	} else {
		var spec testsrc.Spec
		fld.set(&spec, value)
		if src, err := spec.Load(t); err == nil {
			if fuzzed, err = render.All(src); err != nil {
				t.Fatalf("%s %q: nodegen accepts the source but cannot render it: %v", fld.name, value, err)
			}
		}
		if slices.Contains(structSeeds, value) {
			fuzzedRenders.Store(key, fuzzed) // seeds only: fuzzing must not grow it
		}
	}
	if fuzzed == nil {
		return nil, nil, false
	}
	if p, ok := plainRenders.Load(int(i) % len(structFields)); ok {
		return fuzzed, p.(layout.Files), true
	}
	var pspec testsrc.Spec
	fld.set(&pspec, fld.plain)
	_, plain = pspec.MustRender(t)
	plainRenders.Store(int(i)%len(structFields), plain)
	return fuzzed, plain, true
}

// compareStructure checks that the artifacts matched by which have the
// same paths and the same structure in both renders.
func compareStructure(t *testing.T, i uint8, value string, which func(path string) bool, skeleton func(t *testing.T, path string, b []byte) []string) {
	t.Helper()
	if value == "" {
		// Empty is "not set" for most fields (the default applies) and
		// legitimately drops a key for others (a toleration's value).
		return
	}
	fuzzed, plain, ok := structPair(t, i, value)
	if !ok {
		return
	}
	fld := structFields[int(i)%len(structFields)]
	var got, want []string
	for _, p := range fuzzed.Paths() {
		if which(p) {
			got = append(got, p)
		}
	}
	for _, p := range plain.Paths() {
		if which(p) {
			want = append(want, p)
		}
	}
	if len(want) == 0 {
		t.Fatal("no artifact to compare")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s %q: artifacts %v, want %v", fld.name, value, got, want)
	}
	for _, p := range want {
		g, w := skeleton(t, p, fuzzed[p]), skeleton(t, p, plain[p])
		if !slices.Equal(g, w) {
			t.Errorf("%s %q changes the structure of %s:\n%s\nwant\n%s\n--- the file:\n%s",
				fld.name, value, p, strings.Join(g, "\n"), strings.Join(w, "\n"), fuzzed[p])
		}
	}
}

func isTerraform(p string) bool { return strings.HasSuffix(p, ".tf") }

func isYAML(p string) bool {
	return strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, "/kube-env") || p == layout.AutoscalerFlagsPath
}

func isScript(p string) bool { return strings.HasSuffix(p, ".sh") }

func isMarkdown(p string) bool { return strings.HasSuffix(p, ".md") }

// hclSkeleton: the blocks, their labels and attribute names.
func hclSkeleton(t *testing.T, p string, b []byte) []string {
	return tfschema.Blocks(t, layout.Files{p: b})[p]
}

// yamlSkeleton: per document, its keys and the shape of its values (lists
// by length, scalars by YAML tag). flags.txt is one flag per line: its
// flag names. kube-env also gets the names of the autoscaler's variables
// inside AUTOSCALER_ENV_VARS and the number of items of each (split as the
// autoscaler splits them).
func yamlSkeleton(t *testing.T, p string, b []byte) []string {
	if p == layout.AutoscalerFlagsPath {
		var out []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "#") {
				out = append(out, "# a comment") // what it says is no structure
				continue
			}
			name, _, _ := strings.Cut(line, "=")
			out = append(out, name)
		}
		return out
	}
	var out []string
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for n := 0; ; n++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d does not decode: %v\n%s", p, n, err, b)
		}
		out = append(out, fmt.Sprintf("--- document %d", n))
		out = yamlShape(out, "", &doc)
	}
	if strings.HasSuffix(p, "/kube-env") {
		var env map[string]string
		if err := yaml.Unmarshal(b, &env); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, v := range strings.Split(env["AUTOSCALER_ENV_VARS"], ";") {
			name, val, _ := strings.Cut(v, "=")
			out = append(out, fmt.Sprintf("AUTOSCALER_ENV_VARS %s: %d items", name, len(strings.Split(val, ","))))
		}
	}
	return out
}

func yamlShape(out []string, path string, n *yaml.Node) []string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			out = yamlShape(out, path, c)
		}
	case yaml.MappingNode:
		var keys []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			keys = append(keys, n.Content[i].Value)
		}
		out = append(out, fmt.Sprintf("%s: map %q", path, keys))
		for i := 0; i+1 < len(n.Content); i += 2 {
			out = yamlShape(out, path+"."+n.Content[i].Value, n.Content[i+1])
		}
	case yaml.SequenceNode:
		out = append(out, fmt.Sprintf("%s: list of %d", path, len(n.Content)))
		for i, c := range n.Content {
			out = yamlShape(out, fmt.Sprintf("%s[%d]", path, i), c)
		}
	case yaml.AliasNode:
		out = append(out, path+": alias")
	case yaml.ScalarNode:
		out = append(out, fmt.Sprintf("%s: %s", path, n.ShortTag()))
	}
	return out
}

// bashSkeleton: the node types of the script's syntax tree, in order. The
// literal parts of a word (plain, single- or double-quoted text) are left
// out, since quoting a value may split a word into several such parts
// ('it'\”s'); every expansion, substitution, command, redirection and
// comment is kept.
func bashSkeleton(t *testing.T, p string, b []byte) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(b), p)
	if err != nil {
		t.Fatalf("%s does not parse as bash: %v", p, err)
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n.(type) {
		case nil, *syntax.Lit, *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		}
		out = append(out, fmt.Sprintf("%T", n))
		return true
	})
	return out
}

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// markdownSkeleton: the block structure of the document as GFM parses it
// (headings by level, paragraphs, lists, code blocks by language), every
// table by rows × columns, and every Mermaid diagram by its statements:
// nodes (participants, boxes), edges (messages, arrows), notes and
// subgraphs.
func markdownSkeleton(t *testing.T, p string, b []byte) []string {
	doc := markdown.Parser().Parse(text.NewReader(b))
	var out []string
	err := mdast.Walk(doc, func(n mdast.Node, entering bool) (mdast.WalkStatus, error) {
		if !entering {
			return mdast.WalkContinue, nil
		}
		if n.Type() == mdast.TypeInline {
			// Markup inside a line: a value must not open any of it. (A
			// bare URL that GFM's autolink extension makes clickable is
			// not counted: it still reads as written.)
			switch n.Kind() {
			case mdast.KindRawHTML, mdast.KindLink, mdast.KindImage,
				mdast.KindEmphasis, mdast.KindCodeSpan, extast.KindStrikethrough:
				out = append(out, "  inline "+n.Kind().String())
			}
			return mdast.WalkContinue, nil
		}
		if n.Type() != mdast.TypeBlock {
			return mdast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *mdast.Heading:
			out = append(out, fmt.Sprintf("heading %d", n.Level))
		case *extast.Table:
			rows, cols := 0, map[int]int{}
			for r := n.FirstChild(); r != nil; r = r.NextSibling() {
				rows++
				cols[r.ChildCount()]++
			}
			out = append(out, fmt.Sprintf("table %d rows, columns per row %v", rows, cols))
			return mdast.WalkSkipChildren, nil
		case *mdast.FencedCodeBlock:
			lang := string(n.Language(b))
			out = append(out, "code "+lang)
			if lang == "mermaid" {
				var lines []string
				for i := 0; i < n.Lines().Len(); i++ {
					seg := n.Lines().At(i)
					lines = append(lines, string(seg.Value(b)))
				}
				out = append(out, mermaidStatements(lines)...)
			}
		default:
			out = append(out, n.Kind().String())
		}
		return mdast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mermaidStatements counts a diagram's statements by kind. Mermaid ends a
// statement at a line break or ';' and starts a comment at '%%'.
var mermaidString = regexp.MustCompile(`"[^"]*"`)

func mermaidStatements(lines []string) []string {
	counts := map[string]int{}
	for _, l := range lines {
		// A quoted string is one token to Mermaid's lexer (its flowchart
		// grammar enters a string state at '"' and leaves it at the next):
		// nothing inside it is a separator or an arrow.
		l = mermaidString.ReplaceAllString(l, `""`)
		for _, st := range strings.Split(l, ";") {
			st = strings.TrimSpace(st)
			switch {
			case st == "":
			case strings.HasPrefix(st, "%%"):
				counts["comment"]++
			case strings.HasPrefix(st, "participant "), strings.HasPrefix(st, "actor "):
				counts["node"]++
			case strings.HasPrefix(st, "Note "):
				counts["note"]++
			case strings.HasPrefix(st, "subgraph "):
				counts["subgraph"]++
			case st == "end":
				counts["end"]++
			case strings.Contains(st, "->>"), strings.Contains(st, "-->"):
				counts["edge"]++
			case strings.Contains(st, "["):
				counts["node"]++
			default:
				counts["other "+strings.Fields(st)[0]]++
			}
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, fmt.Sprintf("  mermaid %s: %d", k, counts[k]))
	}
	return out
}

// FuzzTerraformStructure: no accepted value changes the Terraform module's
// blocks and attributes.
func FuzzTerraformStructure(f *testing.F) {
	addStructSeeds(f)
	fuzzing = true
	f.Fuzz(func(t *testing.T, field uint8, value string) {
		compareStructure(t, field, value, isTerraform, hclSkeleton)
	})
}

// FuzzYAMLStructure: no accepted value changes the documents and keys of
// the YAML artifacts (Kubernetes manifests, Helm values, kube-env) or the
// autoscaler's flags.
func FuzzYAMLStructure(f *testing.F) {
	addStructSeeds(f)
	fuzzing = true
	f.Fuzz(func(t *testing.T, field uint8, value string) {
		compareStructure(t, field, value, isYAML, yamlSkeleton)
	})
}

// FuzzStartupScriptStructure: no accepted value changes the syntax tree of
// any startup script.
func FuzzStartupScriptStructure(f *testing.F) {
	addStructSeeds(f)
	fuzzing = true
	f.Fuzz(func(t *testing.T, field uint8, value string) {
		compareStructure(t, field, value, isScript, bashSkeleton)
	})
}

// FuzzDocsStructure: no accepted value changes the Markdown structure,
// table shapes or Mermaid diagrams of out/docs.
func FuzzDocsStructure(f *testing.F) {
	addStructSeeds(f)
	fuzzing = true
	f.Fuzz(func(t *testing.T, field uint8, value string) {
		compareStructure(t, field, value, isMarkdown, markdownSkeleton)
	})
}

// TestStructureSkeletonsSeeBreakage proves each skeleton notices the
// breakage it exists for, on hand-broken copies of real artifacts.
func TestStructureSkeletonsSeeBreakage(t *testing.T) {
	_, files := testsrc.Spec{}.MustRender(t)
	tf := layout.TerraformGroupPath("gpu-t4")
	script := layout.StartupScriptPath("gpu-t4")
	cases := []struct {
		name     string
		path     string
		old, new string
		skeleton func(*testing.T, string, []byte) []string
	}{
		{"HCL: injected block", tf, "# Node group gpu-t4", "resource \"x\" \"y\" {}\n# Node group gpu-t4", hclSkeleton},
		{"YAML: injected key", layout.GPUOperatorValuesPath, "\n", "\nevil: true\n", yamlSkeleton},
		{"kube-env: injected variable", layout.KubeEnvPath("gpu-t4"), "os=linux", "os=linux;evil=1", yamlSkeleton},
		{"bash: command substitution in a quoted word", script, "'gpu-t4'", "\"$(id)\"", bashSkeleton},
		{"Markdown: heading", layout.DocsPath, "Cloud T4 GPU burst workers.", "\n# Cloud T4\n", markdownSkeleton},
		{"Markdown: table row", layout.DocsPath, "| gce |", "| gce |\n| x |", markdownSkeleton},
		{"Mermaid: edge", layout.DocsPath, "  S->>P: bind to the node", "  S->>P: bind; P->>S: x", markdownSkeleton},
	}
	for _, c := range cases {
		broken := bytes.Replace(files[c.path], []byte(c.old), []byte(c.new), 1)
		if bytes.Equal(broken, files[c.path]) {
			t.Errorf("%s: %q not found in %s", c.name, c.old, c.path)
			continue
		}
		if slices.Equal(c.skeleton(t, c.path, broken), c.skeleton(t, c.path, files[c.path])) {
			t.Errorf("%s: the skeleton of %s does not change", c.name, c.path)
		}
	}
}
