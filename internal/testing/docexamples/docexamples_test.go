package docexamples_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/shell"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/revision"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// updateEnv names the variable that makes TestDocExamples rewrite every
// failing doc-run block with what its commands print now.
const updateEnv = "NODEGEN_UPDATE_DOC_EXAMPLES"

// docs lists the Markdown files whose examples are checked: the README,
// CONTRIBUTING.md and every .md file under docs/.
func docs(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files[2:])
	return files
}

// block is a fenced code block with the marker comment right above it.
type block struct {
	doc    string // path of the doc, relative to the repository root
	marker string // "doc-run" or "doc-file"
	arg    string // the doc-file's path
	line   int    // 1-based line of the opening fence
	start  int    // index of the first content line in the doc's lines
	end    int    // index of the closing fence
}

var markerRE = regexp.MustCompile(`^<!-- (doc-run|doc-file: (\S+)) -->$`)

// blocks finds the marked blocks of a doc. A marker that is not followed
// by a fenced block, or a fence left open, is an error.
func blocks(doc string, lines []string) ([]block, error) {
	var out []block
	inFence := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		m := markerRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			return nil, fmt.Errorf("%s:%d: %s is not followed by a fenced block", doc, i+1, m[0])
		}
		b := block{doc: doc, marker: "doc-run", line: i + 2, start: i + 2}
		if m[2] != "" {
			b.marker, b.arg = "doc-file", m[2]
		}
		j := i + 2
		for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
			j++
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: fenced block not closed", doc, i+2)
		}
		b.end = j
		out = append(out, b)
		i = j
	}
	return out, nil
}

// shippedCopy is testsrc.ShippedCopyDir relative to the repository's root.
const shippedCopy = "internal/testing/testsrc/testdata/shipped/nodegroups"

// TestDocExamples: every output a doc shows under <!-- doc-run --> is what
// its commands print on the shipped example, and every block under
// <!-- doc-file: PATH --> is that file's content. When one differs, the
// message names the doc and line to update.
//
// The commands run on the tests' fixed copy of the shipped example
// (testsrc.ShippedCopyDir) and the out/ gen renders from it, never on
// nodegroups/ and out/: a fork that edits nodegroups/ keeps this test
// green, and CI holds nodegroups/ to the copy (TestShippedCopyCurrent).
func TestDocExamples(t *testing.T) {
	root := testsrc.RepoRoot()
	if got, err := filepath.Rel(root, testsrc.ShippedCopyDir()); err != nil || filepath.ToSlash(got) != shippedCopy {
		t.Fatalf("the shipped example's copy is at %s, not %s", got, shippedCopy)
	}
	example := renderExample(t)
	update := os.Getenv(updateEnv) == "1"
	if update {
		refreshTemplate(t, root, example)
		refreshNodeRevisions(t, root, example)
	}
	nRun := 0
	for _, doc := range docs(t, root) {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(raw), "\n")
		bs, err := blocks(doc, lines)
		if err != nil {
			t.Error(err)
			continue
		}
		changed := false
		// Last block first: rewriting one then leaves the lines of those
		// before it where they were.
		slices.Reverse(bs)
		for _, b := range bs {
			body := lines[b.start:b.end]
			switch b.marker {
			case "doc-file":
				want, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(b.arg)))
				if err != nil {
					t.Errorf("%s:%d: doc-file %s: %v", b.doc, b.line, b.arg, err)
					continue
				}
				if got := strings.Join(body, "\n") + "\n"; got != string(want) {
					t.Errorf("%s:%d: this block must be the content of %s, and is not: make them equal", b.doc, b.line, b.arg)
				}
			case "doc-run":
				nRun++
				t.Run(fmt.Sprintf("%s:%d", b.doc, b.line), func(t *testing.T) {
					got, err := runBlock(t, root, example, body)
					if err != nil {
						t.Fatalf("%s:%d: %v", b.doc, b.line, err)
					}
					if matchLines(body, got) {
						return
					}
					if update {
						lines = slices.Concat(lines[:b.start], got, lines[b.end:])
						changed = true
						t.Logf("%s:%d: rewritten with the commands' output; review git diff", b.doc, b.line)
						return
					}
					t.Errorf("%s:%d: the commands of this block no longer print what it shows on the shipped example (its copy %s).\n"+
						"If the change is intended, update the block (%s=1 go test ./internal/testing/docexamples/ rewrites it, and refreshes %s from out/; review the diff).\n"+
						"--- the doc\n%s\n--- the commands print\n%s",
						b.doc, b.line, shippedCopy, updateEnv, templateFile, strings.Join(body, "\n"), strings.Join(got, "\n"))
				})
			}
		}
		if changed {
			if err := os.WriteFile(filepath.Join(root, doc), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Errorf("%s rewritten; run the test again until it passes, and review git diff", doc)
		}
	}
	if nRun == 0 {
		t.Error("no <!-- doc-run --> block in the README or docs/: the marker comments were lost")
	}
}

// renderExample copies the fixed copy of the shipped example into a new
// directory as nodegroups/ and renders it into out/ there with gen, as a
// user's clone holds it after nodegen gen. It returns the directory.
func renderExample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "nodegroups")
	if err := testsrc.CopyShippedTo(src); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NODEGEN_CACHE_DIR", t.TempDir())
	var out bytes.Buffer
	if code := cli.Main([]string{"gen", "--source", src, "--out", filepath.Join(dir, "out")}, strings.NewReader(""), &out, &out); code != cli.ExitOK {
		t.Fatalf("nodegen gen of the shipped example's copy: exit %d\n%s", code, out.String())
	}
	return dir
}

// runBlock runs the $ lines of a console block in a scratch copy of the
// example's nodegroups/ and out/ (renderExample's directory) and the
// repository's docs/examples/, and returns the block as it would read
// with what the commands print now.
func runBlock(t *testing.T, root, example string, body []string) ([]string, error) {
	scratch := t.TempDir()
	for _, c := range []struct{ base, dir string }{
		{example, "nodegroups"},
		{example, "out"},
		{root, filepath.Join("docs", "examples")},
	} {
		if err := copyTree(filepath.Join(c.base, c.dir), filepath.Join(scratch, c.dir)); err != nil {
			return nil, err
		}
	}
	t.Chdir(scratch)
	t.Setenv("NODEGEN_CACHE_DIR", t.TempDir()) // check's records stay out of the user's cache
	var got []string
	last := 0
	for i := 0; i < len(body); i++ {
		if !strings.HasPrefix(body[i], "$ ") {
			continue
		}
		cmd := []string{body[i]}
		for strings.HasSuffix(cmd[len(cmd)-1], `\`) && i+1 < len(body) {
			i++
			cmd = append(cmd, body[i])
		}
		got = append(got, cmd...)
		line := strings.TrimPrefix(strings.Join(cmd, "\n"), "$ ")
		args, err := shell.Fields(strings.ReplaceAll(line, "\\\n", " "), func(name string) string {
			if name == "?" {
				return strconv.Itoa(last)
			}
			return ""
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %v", line, err)
		}
		var out bytes.Buffer
		switch {
		case len(args) > 0 && args[0] == "nodegen":
			last = cli.Main(args[1:], strings.NewReader(""), &out, &out)
		case len(args) == 2 && args[0] == "echo":
			out.WriteString(args[1] + "\n")
		case len(args) == 4 && args[0] == "sed" && args[1] == "-i":
			if err := sed(args[2], args[3]); err != nil {
				return nil, fmt.Errorf("%s: %v", line, err)
			}
		default:
			return nil, fmt.Errorf("%s: a doc-run block runs only nodegen, echo $? and sed -i 's/OLD/NEW/' FILE", line)
		}
		if s := strings.TrimSuffix(out.String(), "\n"); s != "" {
			got = append(got, strings.Split(s, "\n")...)
		}
	}
	return got, nil
}

// sed applies the substitution s<d>OLD<d>NEW<d>[g] to every line of file,
// as sed -i does, and fails when it changes nothing: a doc's edit that no
// longer applies to the example.
func sed(script, file string) error {
	if len(script) < 4 || script[0] != 's' {
		return fmt.Errorf("not a substitution: %q", script)
	}
	parts := strings.Split(script[2:], script[1:2])
	if len(parts) != 3 || (parts[2] != "" && parts[2] != "g") {
		return fmt.Errorf("not s/OLD/NEW/ or s/OLD/NEW/g: %q", script)
	}
	re, err := regexp.Compile(parts[0])
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		if parts[2] == "g" {
			lines[i] = re.ReplaceAllLiteralString(l, parts[1])
		} else if loc := re.FindStringIndex(l); loc != nil {
			lines[i] = l[:loc[0]] + parts[1] + l[loc[1]:]
		}
	}
	edited := strings.Join(lines, "\n")
	if edited == string(raw) {
		return fmt.Errorf("%s does not contain %q any more", file, parts[0])
	}
	return os.WriteFile(file, []byte(edited), 0o644)
}

// matchLines compares a block with what was printed, line by line with
// trailing blanks ignored; a line "..." in the block stands for any number
// of lines.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for k := 0; k <= len(got); k++ {
			if matchLines(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && strings.TrimRight(want[0], " \t") == strings.TrimRight(got[0], " \t") && matchLines(want[1:], got[1:])
}

// copyTree copies a directory tree, keeping each file's mode.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, raw, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chmod(target, info.Mode().Perm())
	})
}

var (
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpanRE = regexp.MustCompile("`[^`]*`")
)

// TestDocLinks: every relative link of the README, CONTRIBUTING.md and
// docs/ names a file of the repository, and its #fragment, if any, a
// heading of that file (GitHub's anchors: lower case, punctuation but - and
// _ dropped, spaces to -).
func TestDocLinks(t *testing.T) {
	root := testsrc.RepoRoot()
	anchors := map[string]map[string]bool{}
	anchorsOf := func(doc string) map[string]bool {
		if a, ok := anchors[doc]; ok {
			return a
		}
		a := map[string]bool{}
		raw, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		inFence := false
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(l, "```") {
				inFence = !inFence
			}
			if inFence || !strings.HasPrefix(l, "#") {
				continue
			}
			a[slug(strings.TrimLeft(l, "# "))] = true
		}
		anchors[doc] = a
		return a
	}
	for _, doc := range docs(t, root) {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		inFence := false
		for i, l := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				linked := doc
				if file != "" {
					linked = filepath.ToSlash(filepath.Join(filepath.Dir(doc), file))
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(linked))); err != nil {
						t.Errorf("%s:%d: link %s: no file %s", doc, i+1, target, linked)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(linked, ".md") && !anchorsOf(linked)[frag] {
					t.Errorf("%s:%d: link %s: %s has no heading with anchor #%s", doc, i+1, target, linked, frag)
				}
			}
		}
	}
}

// slug is GitHub's anchor for a heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The drift example's instance template, as gcloud prints it: the gpu-t4
// template of the shipped example whose kube-env lost the group's
// nvidia.com/gpu taint. Its two metadata values come from out/.
const (
	templateFile = "docs/examples/instance-template-gpu-t4.json"
	lostTaint    = "node_taints=nvidia.com/gpu=present:NoSchedule;"
)

// refreshTemplate rewrites the metadata of templateFile from out/gce/gpu-t4
// of the rendered example (the update mode: the template then differs from
// out/ only by the lost taint), keeping every other field.
func refreshTemplate(t *testing.T, root, example string) {
	t.Helper()
	path := filepath.Join(root, filepath.FromSlash(templateFile))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		t.Fatalf("%s: %v", templateFile, err)
	}
	kubeEnv, err := os.ReadFile(filepath.Join(example, "out", "gce", "gpu-t4", "kube-env"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(example, "out", "gce", "gpu-t4", "startup-script.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kubeEnv), lostTaint) {
		t.Fatalf("out/gce/gpu-t4/kube-env has no %s to lose: change the drift example of docs/explain-drift.md", lostTaint)
	}
	values := map[string]string{
		"kube-env":       strings.Replace(string(kubeEnv), lostTaint, "", 1),
		"startup-script": string(script),
	}
	props, _ := tmpl["properties"].(map[string]any)
	md, _ := props["metadata"].(map[string]any)
	items, _ := md["items"].([]any)
	for _, it := range items {
		item, _ := it.(map[string]any)
		if v, ok := values[fmt.Sprint(item["key"])]; ok {
			item["value"] = v
			delete(values, fmt.Sprint(item["key"]))
		}
	}
	if len(values) != 0 {
		t.Fatalf("%s: no metadata item for %v", templateFile, values)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(tmpl); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// nodesFile is the drift example's nodes, as kubectl prints them.
const nodesFile = "docs/examples/nodes.json"

var groupLabelLine = regexp.MustCompile(`(?m)^(\s*)"nodegen.dev/node-group": "([a-z0-9-]+)",\n(\s*"nodegen.dev/revision": "[0-9a-f]*",\n)?`)

// refreshNodeRevisions gives the cloud nodes of nodesFile the revision
// label of their group's kube-env in the rendered example's out/ (the
// update mode: those nodes were made from the current artifacts; stale
// ones are the drift tests').
func refreshNodeRevisions(t *testing.T, root, example string) {
	t.Helper()
	path := filepath.Join(root, filepath.FromSlash(nodesFile))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := groupLabelLine.ReplaceAllStringFunc(string(raw), func(m string) string {
		sub := groupLabelLine.FindStringSubmatch(m)
		env, err := os.ReadFile(filepath.Join(example, "out", filepath.FromSlash(layout.KubeEnvPath(sub[2]))))
		if err != nil {
			return m // not a cloud group of the example
		}
		rev, ok, err := revision.FromKubeEnv(env)
		if err != nil || !ok {
			t.Fatalf("out/%s declares no revision (%v)", layout.KubeEnvPath(sub[2]), err)
		}
		return fmt.Sprintf("%s\"nodegen.dev/node-group\": %q,\n%s\"nodegen.dev/revision\": %q,\n", sub[1], sub[2], sub[1], rev)
	})
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}
