// Package schema embeds the CUE schema that every nodegen source is unified with.
package schema

import _ "embed"

// Source is the text of nodegen.cue.
//
//go:embed nodegen.cue
var Source []byte

// Filename is the name schema positions are reported under.
const Filename = "schema/nodegen.cue"
