package source

import (
	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"
)

// Release drops the evaluation of a valid source (the CUE values and the
// parsed files) once everything that reads positions in it has run, so
// that rendering does not carry it: it is most of the memory of a large
// source. What stays is the model (Fleet, each Member's Source), the
// digest, and for each member the positions of its node groups' names,
// which findings about a group's artifacts point at. After Release, a
// Member's KeyPos knows only those; every other Pos and KeyPos knows
// nothing (token.NoPos).
func (l *Loaded) Release() {
	for _, m := range l.Members {
		m.release()
	}
	l.Value, l.user, l.schema, l.Syntax = cue.Value{}, cue.Value{}, cue.Value{}, nil
}

// release keeps the positions of m's node groups' names and drops m's
// values.
func (m *Member) release() {
	if m.released {
		return
	}
	keys := map[string]token.Pos{}
	for name := range m.Source.NodeGroups {
		keys[name] = m.KeyPos(cue.Str("nodeGroups"), cue.Str(name))
	}
	m.groupKeys = keys
	m.released = true
	m.value, m.user = cue.Value{}, cue.Value{}
}
