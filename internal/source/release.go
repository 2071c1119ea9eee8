package source

import (
	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"
)

// Release drops the evaluation of a valid source (the CUE values and the
// parsed files) once everything that reads positions in it has run, so
// that rendering does not carry it: it is most of the memory of a large
// source. What stays is the model (Source, Fleet), the digest, and for
// each member the positions of its node groups' names, which findings
// about a group's artifacts point at. After Release, KeyPos knows only
// those and Pos nothing (token.NoPos).
func (l *Loaded) Release() {
	for _, m := range l.Members {
		if m.released {
			continue
		}
		keys := map[string]token.Pos{}
		if m.Source != nil {
			for name := range m.Source.NodeGroups {
				keys[name] = m.KeyPos(cue.Str("nodeGroups"), cue.Str(name))
			}
		}
		m.groupKeys = keys
	}
	for _, m := range append([]*Loaded{l}, l.Members...) {
		m.released = true
		m.Value, m.user, m.schema, m.Syntax = cue.Value{}, cue.Value{}, cue.Value{}, nil
	}
}

// releasedKeyPos is KeyPos after Release.
func (l *Loaded) releasedKeyPos(sels []cue.Selector) token.Pos {
	if len(sels) == 2 && sels[0].String() == "nodeGroups" && sels[1].LabelType() == cue.StringLabel {
		return l.groupKeys[sels[1].Unquoted()]
	}
	return token.NoPos
}
