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
	"strconv"
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
// terraform/nodegroup-<group>.tf, onprem/join/<group>.sh), an on-prem VPN
// gateway's <gateway> and a tunnel's <tunnel>, each with one path it
// stands for.
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
				for _, p := range []func(string) string{layout.KubeEnvPath, layout.StartupScriptPath, layout.TerraformGroupPath, layout.OnpremJoinPath} {
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
			if m := familyPath.FindStringSubmatch(rel); m != nil && trees[m[1]] {
				kind, ok = layout.ImageBuildPath("<family>"), true
			}
			if !ok {
				kind = rel
				if first, rest, cut := strings.Cut(rel, "/"); cut && trees[first+"/"] {
					kind = rest
				}
			}
			kind = vpnGatewayPath.ReplaceAllString(kind, "${1}<gateway>/")
			kind = tunnelName.ReplaceAllString(kind, "<tunnel>")
			kinds[kind] = rel
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return kinds
}

// vpnGatewayPath matches the directory of an on-prem VPN gateway's
// files, and tunnelName a tunnel's name in them: a kind writes them
// <gateway> and <tunnel>.
var (
	vpnGatewayPath = regexp.MustCompile(`^(` + regexp.QuoteMeta(layout.OnpremVPNDir) + `/)[^/]+/`)
	tunnelName     = regexp.MustCompile(`tunnel[0-9]+`)
)

// familyPath matches the build script of an image family, in a cluster's
// tree (its first group) or in out/.
var familyPath = regexp.MustCompile(`^((?:[^/]+/)?)` + regexp.QuoteMeta(layout.ImagesDir) + `/[^/]+/build\.sh$`)

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
		case strings.HasPrefix(entry[i:], "<family>"):
			b.WriteString("<family>")
			i += len("<family>") - 1
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

// installCommand matches the commands of an install: manifests applied,
// the providerID and on-prem label scripts, Helm repositories and releases.
var installCommand = regexp.MustCompile(`^(kubectl apply (--\S+ )*-f out/|bash out/onprem/(set-provider-id|label-onprem-nodes)\.sh$|helm repo (add|update)|helm upgrade --install )`)

// installCommands returns the install commands of the sh blocks of text,
// in order, each on one line (continuations joined), without comments.
func installCommands(text string) []string {
	var out []string
	inSh := false
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "```sh"):
			inSh = true
			continue
		case strings.HasPrefix(l, "```"):
			inSh = false
			continue
		case !inSh:
			continue
		}
		for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(lines[i])
		}
		if c, _, _ := strings.Cut(l, " #"); installCommand.MatchString(strings.TrimSpace(c)) {
			out = append(out, strings.Join(strings.Fields(c), " "))
		}
	}
	return out
}

// TestInstallBlocksAgreeWithDay0: the Helm and kubectl blocks of the
// README and docs/terraform.md run the install commands day0.md gives for
// the shipped example (every manifest, the providerID script, the charts
// at their versions), in day0.md's order.
func TestInstallBlocksAgreeWithDay0(t *testing.T) {
	example := renderExample(t)
	day0, err := os.ReadFile(filepath.Join(example, "out", filepath.FromSlash(layout.Day0DocsPath)))
	if err != nil {
		t.Fatal(err)
	}
	want := installCommands(string(day0))
	if len(want) < 8 {
		t.Fatalf("found only %d install commands in day0.md: %q", len(want), want)
	}
	for _, doc := range []string{"README.md", "docs/terraform.md"} {
		raw, err := os.ReadFile(filepath.Join(testsrc.RepoRoot(), filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		_, section, ok := strings.Cut(string(raw), "\n### Helm and kubectl\n")
		if !ok {
			t.Errorf("%s: no section ### Helm and kubectl", doc)
			continue
		}
		if i := strings.Index(section, "\n#"); i >= 0 {
			section = section[:i]
		}
		if got := installCommands(section); !slices.Equal(got, want) {
			t.Errorf("%s's Helm and kubectl block runs\n  %s\nday0.md runs\n  %s", doc, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		// The step numbers it names are those of day0.md's steps that
		// hold these commands.
		if m := day0StepRange.FindStringSubmatch(section); m != nil {
			first, last := day0StepsOf(string(day0), want)
			if m[1] != strconv.Itoa(first) || m[2] != strconv.Itoa(last) {
				t.Errorf("%s says day0.md's steps %s to %s run these commands; they are in its steps %d to %d", doc, m[1], m[2], first, last)
			}
		} else if doc == "README.md" {
			t.Errorf("%s's Helm and kubectl section names no day0.md steps (\"steps N to M\")", doc)
		}
	}
}

// day0StepRange matches a doc's reference to the day0.md steps of its
// install block.
var day0StepRange = regexp.MustCompile("`out/docs/day0.md` \\(steps (\\d+) to (\\d+)")

// day0StepsOf returns the first and last numbered step of day0 whose sh
// blocks hold one of commands.
func day0StepsOf(day0 string, commands []string) (first, last int) {
	heading := regexp.MustCompile(`(?m)^## (\d+)\. `)
	for _, loc := range heading.FindAllStringSubmatchIndex(day0, -1) {
		end := len(day0)
		if i := strings.Index(day0[loc[1]:], "\n## "); i >= 0 {
			end = loc[1] + i
		}
		n, _ := strconv.Atoi(day0[loc[2]:loc[3]])
		for _, c := range installCommands(day0[loc[0]:end]) {
			if slices.Contains(commands, c) {
				if first == 0 {
					first = n
				}
				last = n
				break
			}
		}
	}
	return first, last
}

// TestInstallOrder: the README's Install block works on a fresh machine:
// it puts the directory go install writes to on PATH before it first runs
// nodegen.
func TestInstallOrder(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testsrc.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "\n## Install\n")
	if ok {
		_, rest, ok = strings.Cut(rest, "```sh\n")
	}
	if !ok {
		t.Fatal("README.md: no sh block under ## Install")
	}
	block, _, _ := strings.Cut(rest, "```")
	install, path, run := -1, -1, -1
	for i, l := range strings.Split(block, "\n") {
		switch {
		case strings.HasPrefix(l, "go install ./cmd/nodegen") && install < 0:
			install = i
		case strings.HasPrefix(l, `export PATH="$(go env GOPATH)/bin:`) && path < 0:
			path = i
		case strings.HasPrefix(l, "nodegen ") && run < 0:
			run = i
		}
	}
	if install < 0 || run < 0 || !(install < path && path < run) {
		t.Errorf("README.md's Install block must run go install ./cmd/nodegen, then put $(go env GOPATH)/bin on PATH, then nodegen (lines %d, %d, %d):\n%s", install, path, run, block)
	}
}

// fileArg matches a kubectl or helm file argument.
var fileArg = regexp.MustCompile(`(?:^|\s)-f\s+(\S+)`)

// TestOneInstallStyle: the README, docs/ and every doc gen renders (of
// the shipped example and of a fleet in a mesh) install the same way as
// day0.md: Helm releases with helm upgrade --install (never helm
// install), Terraform from the root module (never terraform -chdir), and
// the rendered steps run from the directory that holds out/ (every file
// they apply under out/).
func TestOneInstallStyle(t *testing.T) {
	root := testsrc.RepoRoot()
	texts := map[string]string{}
	for _, doc := range docs(t, root) {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		texts[doc] = string(raw)
	}
	t.Setenv("NODEGEN_CACHE_DIR", t.TempDir())
	for _, src := range []string{testsrc.ShippedCopyDir(), testsrc.FleetDir()} {
		out := filepath.Join(t.TempDir(), "out")
		var buf bytes.Buffer
		if code := cli.Main([]string{"gen", "--source", src, "--out", out}, strings.NewReader(""), &buf, &buf); code != cli.ExitOK {
			t.Fatalf("nodegen gen --source %s: exit %d\n%s", src, code, buf.String())
		}
		err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
				return err
			}
			raw, err := os.ReadFile(p)
			rel, _ := filepath.Rel(filepath.Dir(out), p)
			texts["rendered "+filepath.ToSlash(rel)] = string(raw)
			if err == nil {
				for _, c := range installLines(string(raw)) {
					for _, m := range fileArg.FindAllStringSubmatch(c, -1) {
						if m[1] != "-" && !strings.HasPrefix(m[1], "out/") {
							t.Errorf("rendered %s: %q applies %s, not a path from the directory that holds out/", filepath.ToSlash(rel), c, m[1])
						}
					}
				}
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, name := range slices.Sorted(maps.Keys(texts)) {
		for _, bad := range []string{"helm install ", "terraform -chdir"} {
			if strings.Contains(texts[name], bad) {
				t.Errorf("%s says %q: day0.md and the README use helm upgrade --install and terraform apply in the root module", name, strings.TrimSpace(bad))
			}
		}
		n++
	}
	if n < 20 {
		t.Errorf("only %d docs read", n)
	}
}

// installLines returns the lines of the sh blocks of a Markdown text.
func installLines(text string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```sh"):
			in = true
		case strings.HasPrefix(t, "```"):
			in = false
		case in:
			out = append(out, t)
		}
	}
	return out
}
