package validate

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/diag"
)

// Syntax checks what the user wrote rather than what it evaluates to:
// secrets anywhere in the files (string values, labels and comments), and
// node groups defined more than once (CUE would silently merge them).
func Syntax(files []*ast.File) diag.List {
	return append(Secrets(files), DuplicateGroups(files)...).Sorted()
}

// Secrets reports every secret in files: a kubeadm bootstrap token or a
// private key block in a string value, a label or a comment.
func Secrets(files []*ast.File) diag.List {
	var list diag.List
	for _, f := range files {
		scanSecrets(f, &list)
	}
	return list.Sorted()
}

// DuplicateGroups reports every node group defined in more than one
// place, at each place.
func DuplicateGroups(files []*ast.File) diag.List {
	var list diag.List
	duplicateGroups(files, &list)
	return list.Sorted()
}

var (
	// bootstrapToken is a kubeadm bootstrap token ([a-z0-9]{6}.[a-z0-9]{16},
	// k8s.io/cluster-bootstrap's BootstrapTokenPattern) not embedded in a
	// longer word.
	bootstrapToken = regexp.MustCompile(`(?:^|[^a-z0-9])([a-z0-9]{6})\.[a-z0-9]{16}(?:[^a-z0-9]|$)`)
	// privateKey is the first line of a PEM private key block (PKCS#1 "RSA
	// PRIVATE KEY", SEC 1 "EC PRIVATE KEY", PKCS#8 "PRIVATE KEY" and
	// "ENCRYPTED PRIVATE KEY", "OPENSSH PRIVATE KEY", ...).
	privateKey = regexp.MustCompile(`-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY)-----`)
)

// secret finds a secret in text: its offset and what to say about it.
func secret(text string) (int, string, bool) {
	if m := bootstrapToken.FindStringSubmatchIndex(text); m != nil {
		id := text[m[2]:m[3]]
		return m[2], fmt.Sprintf("a kubeadm bootstrap token (%s.****************) must not be in the source: whoever can read it can join machines to the cluster; "+
			"store it in Secret Manager, reference it with cluster.joinToken.secretManager, and delete this one (kubeadm token delete %s)", id, id), true
	}
	if m := privateKey.FindStringSubmatchIndex(text); m != nil {
		return m[0], fmt.Sprintf("a private key (%s) must not be in the source: keep it in Secret Manager, and replace this one", text[m[2]:m[3]]), true
	}
	return 0, "", false
}

// scanSecrets reports every string literal, label and comment of f that
// holds a secret, at the position of the secret itself.
func scanSecrets(f *ast.File, list *diag.List) {
	var path []string
	pushed := map[ast.Node]bool{}
	index := map[ast.Node]int{}
	report := func(pos token.Pos, raw, value string) {
		if off, msg, ok := secret(raw); ok {
			list.Add(pos.Add(off), strings.Join(path, "."), "%s", msg)
		} else if _, msg, ok := secret(value); ok {
			list.Add(pos, strings.Join(path, "."), "%s", msg)
		}
	}
	ast.Walk(f, func(n ast.Node) bool {
		if i, ok := index[n]; ok {
			path = append(path, strconv.Itoa(i))
			pushed[n] = true
		}
		switch n := n.(type) {
		case *ast.Field:
			path = append(path, labelString(n.Label))
			pushed[n] = true
		case *ast.ListLit:
			for i, e := range n.Elts {
				index[e] = i
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				value, err := literal.Unquote(n.Value)
				if err != nil {
					value = n.Value
				}
				report(n.ValuePos, n.Value, value)
			}
		case *ast.Comment:
			report(n.Slash, n.Text, n.Text)
		}
		return true
	}, func(n ast.Node) {
		if pushed[n] {
			path = path[:len(path)-1]
		}
	})
}

// labelString writes a field label as findings write paths.
func labelString(l ast.Label) string {
	name, isIdent, err := ast.LabelName(l)
	switch {
	case err != nil:
		return "[_]"
	case isIdent:
		return name
	}
	return diag.Path(name)
}

// duplicateGroups reports a node group defined in more than one place,
// at each place.
func duplicateGroups(files []*ast.File, list *diag.List) {
	type def struct {
		name string
		pos  token.Pos
	}
	var defs []def
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			if name, _, err := ast.LabelName(fd.Label); err != nil || name != "nodeGroups" {
				continue
			}
			s, ok := fd.Value.(*ast.StructLit)
			if !ok {
				continue
			}
			for _, e := range s.Elts {
				g, ok := e.(*ast.Field)
				if !ok {
					continue
				}
				name, _, err := ast.LabelName(g.Label)
				if err != nil {
					continue
				}
				defs = append(defs, def{name, g.Label.Pos()})
			}
		}
	}
	for i, d := range defs {
		var others []string
		for j, o := range defs {
			if j != i && o.name == d.name {
				others = append(others, fmt.Sprintf("%s:%d:%d", filepath.Base(o.pos.Filename()), o.pos.Line(), o.pos.Column()))
			}
		}
		if len(others) > 0 {
			list.Add(d.pos, diag.Path("nodeGroups", d.name),
				"node group %q is also defined at %s; CUE would merge the definitions into one group: give each group one definition and a name of its own",
				d.name, strings.Join(others, ", "))
		}
	}
}
