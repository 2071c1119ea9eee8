package docexamples_test

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// renderedKinds renders the shipped example's copy and the tests' fleet
// (two clusters in a mesh) with gen and returns every file gen wrote as a
// kind: the path under out/ with a fleet's cluster directory taken off and
// a group's name written <group> (gce/<group>/kube-env,
// terraform/nodegroup-<group>.tf), each with one path it stands for.
func renderedKinds(t *testing.T) map[string]string {
	t.Helper()
	t.Setenv("NODEGEN_CACHE_DIR", t.TempDir())
	kinds := map[string]string{}
	for _, src := range []string{testsrc.ShippedCopyDir(), testsrc.FleetDir()} {
		l, err := source.Load(src)
		if err != nil {
			t.Fatalf("loading %s: %v", src, err)
		}
		out := filepath.Join(t.TempDir(), "out")
		var buf bytes.Buffer
		if code := cli.Main([]string{"gen", "--source", src, "--out", out}, strings.NewReader(""), &buf, &buf); code != cli.ExitOK {
			t.Fatalf("nodegen gen --source %s: exit %d\n%s", src, code, buf.String())
		}
		// A path of a group's artifact → its kind.
		groupPath := map[string]string{}
		for _, c := range l.Fleet.Clusters {
			for g := range c.NodeGroups {
				for _, p := range []func(string) string{layout.KubeEnvPath, layout.StartupScriptPath, layout.TerraformGroupPath} {
					groupPath[c.Tree+p(g)] = p("<group>")
				}
			}
		}
		trees := map[string]bool{}
		for _, c := range l.Fleet.Clusters {
			trees[c.Tree] = true
		}
		err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(out, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			kind, ok := groupPath[rel]
			if !ok {
				kind = rel
				if first, rest, cut := strings.Cut(rel, "/"); cut && trees[first+"/"] {
					kind = rest
				}
			}
			kinds[kind] = rel
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return kinds
}

// treePattern turns an entry of the README's tree (a path under out/ with
// <group> or <cluster> for a name and * for any part of a name) into a
// regular expression of kinds.
func treePattern(entry string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(entry); i++ {
		switch {
		case strings.HasPrefix(entry[i:], "<group>"):
			b.WriteString("<group>")
			i += len("<group>") - 1
		case entry[i] == '*':
			b.WriteString("[^/]*")
		default:
			b.WriteString(regexp.QuoteMeta(entry[i : i+1]))
		}
	}
	if strings.HasSuffix(entry, "/") {
		b.WriteString(".*") // a directory stands for what it holds
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// readmeTree returns the entries under out/ of the README's "What it is"
// tree: each line's first field, a path, relative to the directory line
// above it that it is indented under. Lines indented deeper than an entry
// could be continue the description of the one above.
func readmeTree(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testsrc.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "## What it is\n\n```\n")
	if !ok {
		t.Fatal("README.md: no ``` block right under ## What it is")
	}
	block, _, _ := strings.Cut(rest, "```\n")
	var entries []string
	var dirs []string // the directory of each indentation level (two spaces)
	for _, line := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if indent%2 != 0 || indent/2 > len(dirs) || trimmed == "" {
			continue // a description's continuation
		}
		field := strings.Fields(trimmed)[0]
		dirs = append(dirs[:indent/2], field)
		full := strings.Join(dirs, "")
		if !strings.HasPrefix(full, "out/") {
			continue // the source
		}
		if rel := strings.TrimPrefix(full, "out/"); rel != "" && rel != "<cluster>/" {
			entries = append(entries, strings.TrimPrefix(rel, "<cluster>/"))
		}
	}
	if len(entries) == 0 {
		t.Fatal("README.md: the tree under ## What it is lists nothing under out/")
	}
	return entries
}

// TestReadmeTree: the README's "What it is" tree lists every kind of file
// gen writes (of the shipped example and of a fleet in a mesh), and every
// file it lists is one gen writes.
func TestReadmeTree(t *testing.T) {
	kinds := renderedKinds(t)
	entries := readmeTree(t)
	used := map[string]bool{}
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		found := false
		for _, e := range entries {
			if treePattern(e).MatchString(kind) {
				found, used[e] = true, true
			}
		}
		if !found {
			t.Errorf("README.md's tree under ## What it is does not list %s (gen writes %s): add it", kind, kinds[kind])
		}
	}
	for _, e := range entries {
		if !used[e] && !strings.HasSuffix(e, "/") {
			t.Errorf("README.md's tree under ## What it is lists out/%s, which gen does not write", e)
		}
	}
}

// TestHelpListsRendered: nodegen --help names every kind of file gen writes:
// its directory and its name.
func TestHelpListsRendered(t *testing.T) {
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"--help"}, strings.NewReader(""), &out, &errb); code != cli.ExitOK {
		t.Fatalf("nodegen --help: exit %d\n%s", code, errb.String())
	}
	help := out.String()
	for _, kind := range slices.Sorted(maps.Keys(renderedKinds(t))) {
		dir, name := path.Split(kind)
		if dir != "" && !strings.Contains(help, " "+dir+" ") {
			t.Errorf("nodegen --help does not name the directory %s (of %s)", dir, kind)
		}
		if !regexp.MustCompile(`[ ,]` + regexp.QuoteMeta(name) + `[ ,\n]`).MatchString(help) {
			t.Errorf("nodegen --help does not name %s (%s)", name, kind)
		}
	}
}
