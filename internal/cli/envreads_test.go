package cli_test

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// envRead is a variable a script takes from its environment.
type envRead struct {
	line       uint // the first read
	hasDefault bool // some read gives a default: ${NAME:-...}, ${NAME-...}, ${NAME:=...}, ${NAME=...}
}

// shellSet are the variables bash sets itself and those every process
// environment has; a script reading them reads no setting.
var shellSet = map[string]bool{
	"BASH_REMATCH": true, "BASH_SOURCE": true, "BASH_LINENO": true, "BASHPID": true, "EPOCHSECONDS": true,
	"EPOCHREALTIME": true, "FUNCNAME": true, "IFS": true, "LINENO": true, "MAPFILE": true, "OPTARG": true,
	"OPTIND": true, "PIPESTATUS": true, "PPID": true, "RANDOM": true, "UID": true, "EUID": true, "REPLY": true, "SECONDS": true,
	"HOME": true, "PATH": true, "TMPDIR": true,
}

var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// environmentReads returns the variables script reads from its
// environment, by name: a top-level statement (in order) reading a name
// that no earlier top-level statement assigned, nor the statement itself
// before the read, or a function reading a name the script assigns
// nowhere. So NAME="${NAME:-default}" reads NAME from the environment
// (with a default) and readonly NAME=value reads nothing. The variables
// of shellSet are left out.
func environmentReads(script string) (map[string]envRead, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	reads := map[string]envRead{}
	note := func(name string, pos syntax.Pos, hasDefault bool) {
		if shellSet[name] || !shellName.MatchString(name) {
			return
		}
		r, ok := reads[name]
		if !ok {
			r.line = pos.Line()
		}
		r.hasDefault = r.hasDefault || hasDefault
		reads[name] = r
	}
	var all []syntax.Node
	for _, st := range f.Stmts {
		all = append(all, st)
	}
	anywhere := shellAssigned(all...)
	assigned := map[string]bool{}
	for _, st := range f.Stmts {
		switch c := st.Cmd.(type) {
		case *syntax.FuncDecl:
			for _, r := range shellReads(c.Body) {
				if !anywhere[r.name] {
					note(r.name, r.pos, r.hasDefault)
				}
			}
			continue
		case *syntax.CallExpr:
			if len(c.Args) == 0 && len(st.Redirs) == 0 {
				// Assignments alone: each value is read before its name is set.
				for _, a := range c.Assigns {
					for _, r := range shellReads(a) {
						if !assigned[r.name] {
							note(r.name, r.pos, r.hasDefault)
						}
					}
					assigned[a.Name.Value] = true
				}
				continue
			}
		case *syntax.DeclClause:
			for _, a := range c.Args {
				for _, r := range shellReads(a) {
					if !assigned[r.name] {
						note(r.name, r.pos, r.hasDefault)
					}
				}
				if a.Name != nil {
					assigned[a.Name.Value] = true
				}
			}
			continue
		}
		here := shellAssigned(st)
		for _, r := range shellReads(st) {
			if !assigned[r.name] && !here[r.name] {
				note(r.name, r.pos, r.hasDefault)
			}
		}
		maps.Copy(assigned, here)
	}
	return reads, nil
}

// shellRead is one read of a variable.
type shellRead struct {
	name       string
	pos        syntax.Pos
	hasDefault bool
}

// shellReads returns the variables node reads: its parameter expansions
// and the names in its arithmetic.
func shellReads(node syntax.Node) []shellRead {
	var out []shellRead
	var arith func(e syntax.ArithmExpr)
	arith = func(e syntax.ArithmExpr) {
		switch e := e.(type) {
		case *syntax.Word:
			if lit := e.Lit(); lit != "" && shellName.MatchString(lit) {
				out = append(out, shellRead{name: lit, pos: e.Pos()})
			}
		case *syntax.BinaryArithm:
			if e.Op != syntax.Assgn {
				arith(e.X)
			}
			arith(e.Y)
		case *syntax.UnaryArithm:
			arith(e.X)
		case *syntax.ParenArithm:
			arith(e.X)
		}
	}
	syntax.Walk(node, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ParamExp:
			def := n.Exp != nil && (n.Exp.Op == syntax.DefaultUnset || n.Exp.Op == syntax.DefaultUnsetOrNull ||
				n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull)
			if n.Param != nil {
				out = append(out, shellRead{name: n.Param.Value, pos: n.Pos(), hasDefault: def})
			}
			if n.Index != nil {
				arith(n.Index)
			}
			if n.Slice != nil {
				arith(n.Slice.Offset)
				if n.Slice.Length != nil {
					arith(n.Slice.Length)
				}
			}
		case *syntax.ArithmExp:
			arith(n.X)
		case *syntax.ArithmCmd:
			arith(n.X)
		case *syntax.CStyleLoop:
			for _, e := range []syntax.ArithmExpr{n.Init, n.Cond, n.Post} {
				if e != nil {
					arith(e)
				}
			}
		}
		return true
	})
	return out
}

// shellAssigned returns the variables the nodes assign anywhere:
// assignments and declarations, for loops, read, mapfile, printf -v and
// arithmetic assignments.
func shellAssigned(nodes ...syntax.Node) map[string]bool {
	set := map[string]bool{}
	var arith func(e syntax.ArithmExpr)
	arith = func(e syntax.ArithmExpr) {
		switch e := e.(type) {
		case *syntax.BinaryArithm:
			if e.Op >= syntax.Assgn && e.Op <= syntax.ShrAssgn {
				if w, ok := e.X.(*syntax.Word); ok && w.Lit() != "" {
					set[w.Lit()] = true
				}
			}
			arith(e.X)
			arith(e.Y)
		case *syntax.UnaryArithm:
			if w, ok := e.X.(*syntax.Word); ok && (e.Op == syntax.Inc || e.Op == syntax.Dec) && w.Lit() != "" {
				set[w.Lit()] = true
			}
			arith(e.X)
		case *syntax.ParenArithm:
			arith(e.X)
		}
	}
	for _, node := range nodes {
		syntax.Walk(node, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Assign:
				if n.Name != nil {
					set[n.Name.Value] = true
				}
			case *syntax.WordIter:
				set[n.Name.Value] = true
			case *syntax.CallExpr:
				if len(n.Args) == 0 {
					break
				}
				switch n.Args[0].Lit() {
				case "read", "mapfile", "readarray":
					for _, a := range n.Args[1:] {
						if l := a.Lit(); shellName.MatchString(l) {
							set[l] = true
						}
					}
				case "printf":
					for i := 1; i+1 < len(n.Args); i++ {
						if n.Args[i].Lit() == "-v" {
							set[n.Args[i+1].Lit()] = true
						}
					}
				}
			case *syntax.ArithmExp:
				arith(n.X)
			case *syntax.ArithmCmd:
				arith(n.X)
			case *syntax.CStyleLoop:
				for _, e := range []syntax.ArithmExpr{n.Init, n.Cond, n.Post} {
					if e != nil {
						arith(e)
					}
				}
			}
			return true
		})
	}
	return set
}

// TestEnvironmentReads: environmentReads finds the settings a script
// takes from its environment, and only those.
func TestEnvironmentReads(t *testing.T) {
	script := `#!/usr/bin/env bash
set -euo pipefail
: "${PROJECT:?PROJECT is required}"
DELAY="${DELAY:-10}"
readonly URL=http://metadata.google.internal/computeMetadata/v1
readonly FULL="${URL}/${PROJECT}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/x.XXXX")"
readonly WORK
declare -A SEEN=()
while read -r base rest; do
	SEEN["${base}"]="${rest}"
done <<<"${GROUPS_IN}"
f() {
	local p=$1 n
	printf -v n '%s' "${p}"
	read -ra H <<<"${n}"
	((COUNT += ${#H[@]}))
	for x in "${H[@]}"; do echo "${x} ${SEEN[${x}]-} ${FULL} ${LATER}"; done
	((EPOCHSECONDS - STARTED < LIMIT)) || echo "${WORK} ${OPTIONAL:-none}"
	echo "${ARR[*]:START:COUNT}"
}
COUNT=0
STARTED=0
f "$@"
`
	got, err := environmentReads(script)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]envRead{
		"PROJECT":   {line: 3},
		"DELAY":     {line: 4, hasDefault: true},
		"GROUPS_IN": {line: 12},
		"LATER":     {line: 18},
		"LIMIT":     {line: 19},
		"OPTIONAL":  {line: 19, hasDefault: true},
		"ARR":       {line: 20},
		"START":     {line: 20},
	}
	if !maps.Equal(got, want) {
		t.Errorf("environmentReads:\n got  %v\n want %v", got, want)
		for _, n := range slices.Sorted(maps.Keys(got)) {
			if got[n] != want[n] {
				t.Logf("%s: got %+v, want %+v", n, got[n], want[n])
			}
		}
	}
}
