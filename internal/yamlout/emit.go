package yamlout

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// emit writes the generic tree (string-keyed maps, lists, strings,
// booleans, nulls and ints, as fromJSON builds it) as block YAML, the
// bytes go.yaml.in/yaml/v2 (v2.4) writes for it, without the library's
// reflection and event machinery. ok is false when the tree holds
// something this writer does not handle the library's way for certain;
// the caller then asks the library.
//
// What it relies on in the library's encoder and emitter (encode.go,
// emitterc.go, sorter.go, resolve.go of go.yaml.in/yaml/v2 v2.4.4):
//   - a document that is a map or a list is written in block style with
//     an indentation of 2; a list that is a map's value is not indented
//     under its key; an item of a list that is a non-empty map or list
//     starts on the line of its "-"; an empty map or list is written "{}"
//     or "[]" in place; nil is "null", booleans "true" and "false", ints
//     in decimal.
//   - map keys are sorted by the library's key order (keyLess).
//   - a string is written plain when, read back plain, it is a string
//     (resolve) and the emitter allows it plain (analyze_scalar); else
//     quoted. How a string without line breaks is written does not
//     depend on where it stands, except that the emitter breaks a long
//     line at a space once it passes column 80 (not in a key), and that a
//     key of more than 128 bytes is not written as a simple key. So a
//     string's form is the library's own for the string as a document of
//     its own (scalarForm), used where no line break can happen.
func emit(tree any) (y []byte, ok bool) {
	e := emitter{buf: make([]byte, 0, 512)}
	switch t := tree.(type) {
	case map[string]any:
		if len(t) == 0 {
			return []byte("{}\n"), true
		}
		ok = e.mapping(t, 0, false)
	case []any:
		if len(t) == 0 {
			return []byte("[]\n"), true
		}
		ok = e.sequence(t, 0, false)
	default:
		return nil, false
	}
	return e.buf, ok
}

type emitter struct {
	buf []byte
	// lineStart is where the current line starts in buf.
	lineStart int
}

// bestWidth is the column past which the library's emitter breaks a line
// at a space.
const bestWidth = 80

// maxSimpleKey is the longest key the library writes as a simple key.
const maxSimpleKey = 128

func (e *emitter) newline() {
	e.buf = append(e.buf, '\n')
	e.lineStart = len(e.buf)
}

func (e *emitter) indent(n int) {
	for range n {
		e.buf = append(e.buf, ' ')
	}
}

// mapping writes a non-empty map whose keys start at column indent. When
// inline, the first key goes where the line stands (after a list's "- ").
func (e *emitter) mapping(m map[string]any, indent int, inline bool) bool {
	keys := make([]string, 0, len(m))
	digits := false
	for k := range m {
		if !asciiKey(k) {
			return false
		}
		digits = digits || strings.ContainsAny(k, "0123456789")
		keys = append(keys, k)
	}
	if !sortKeys(keys, digits) {
		return false
	}
	for i, k := range keys {
		if i > 0 || !inline {
			e.indent(indent)
		}
		if len(k) > maxSimpleKey || !e.scalar(k, true) {
			return false
		}
		e.buf = append(e.buf, ':')
		if !e.value(m[k], indent, true) {
			return false
		}
	}
	return true
}

// sequence writes a non-empty list whose "-" start at column indent.
func (e *emitter) sequence(l []any, indent int, inline bool) bool {
	for i, v := range l {
		if i > 0 || !inline {
			e.indent(indent)
		}
		e.buf = append(e.buf, '-')
		if !e.value(v, indent, false) {
			return false
		}
	}
	return true
}

// value writes v after a key's ':' (inMap) or a list's '-' at column
// indent, and the line break after it.
func (e *emitter) value(v any, indent int, inMap bool) bool {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			e.buf = append(e.buf, " {}"...)
			break
		}
		if inMap {
			e.newline()
			return e.mapping(t, indent+2, false)
		}
		e.buf = append(e.buf, ' ')
		return e.mapping(t, indent+2, true)
	case []any:
		if len(t) == 0 {
			e.buf = append(e.buf, " []"...)
			break
		}
		if inMap {
			e.newline()
			return e.sequence(t, indent, false)
		}
		e.buf = append(e.buf, ' ')
		return e.sequence(t, indent+2, true)
	case string:
		e.buf = append(e.buf, ' ')
		if !e.scalar(t, false) {
			return false
		}
	case nil:
		e.buf = append(e.buf, " null"...)
	case bool:
		e.buf = append(e.buf, ' ')
		e.buf = strconv.AppendBool(e.buf, t)
	case int:
		e.buf = append(e.buf, ' ')
		e.buf = strconv.AppendInt(e.buf, int64(t), 10)
	default:
		return false
	}
	e.newline()
	return true
}

// scalar writes the string s where the line stands, as the library would
// there; false when that is not certain.
func (e *emitter) scalar(s string, key bool) bool {
	if plainSafe(s) {
		e.buf = append(e.buf, s...)
		return true
	}
	form, ok := scalarForm(s)
	if !ok {
		return false
	}
	// Only a space can become a line break, and only in a value.
	if !key && strings.IndexByte(s, ' ') >= 0 && len(e.buf)-e.lineStart+len(form) > bestWidth {
		return false
	}
	e.buf = append(e.buf, form...)
	return true
}

// plainSafe reports whether the library writes s plain for certain: it
// starts with a letter, '/' or '_' (so it reads back as a string unless
// it is one of YAML 1.1's words for booleans and null), holds only
// letters, digits and ./_-=,@+ besides a ':' that is not its last byte
// (none of which the emitter treats as an indicator past the first
// byte, or as a space or line break).
func plainSafe(s string) bool {
	if s == "" {
		return false
	}
	switch c := s[0]; {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '/', c == '_':
	default:
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '/', c == '_', c == '-', c == '=', c == ',', c == '@', c == '+':
		case c == ':' && i < len(s)-1:
		default:
			return false
		}
	}
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"true", "True", "TRUE", "false", "False", "FALSE",
		"on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL":
		return false
	}
	return true
}

// forms remembers scalarForm's answers (each string's form is the same
// for the whole process), up to maxFormBytes.
var forms = struct {
	sync.RWMutex
	m     map[string]string
	bytes int
}{m: map[string]string{}}

const maxFormBytes = 4 << 20

// scalarForm returns how the library writes s as a document of its own,
// without the final line break; ok is false when that form is not the
// one s has everywhere: it spans lines (a line break, or a break the
// emitter made), or s is not valid UTF-8 (the library writes such a
// string as !!binary).
func scalarForm(s string) (string, bool) {
	forms.RLock()
	f, ok := forms.m[s]
	forms.RUnlock()
	if ok {
		return f, f != ""
	}
	f = ""
	if utf8.ValidString(s) && !strings.ContainsAny(s, "\n\r\u0085\u2028\u2029") {
		if b, err := yamlv2.Marshal(s); err == nil {
			if b, cut := bytes.CutSuffix(b, []byte("\n")); cut && len(b) > 0 && bytes.IndexByte(b, '\n') < 0 && !bytes.HasPrefix(b, []byte("---")) && !bytes.HasPrefix(b, []byte("!")) {
				f = string(b)
			}
		}
	}
	forms.Lock()
	if size := len(s) + len(f); forms.bytes+size <= maxFormBytes {
		forms.m[s] = f
		forms.bytes += size
	}
	forms.Unlock()
	return f, f != ""
}

// maxDigitKeys is the most keys of a map with digits in its keys that
// sortKeys checks pair by pair.
const maxDigitKeys = 32

// sortKeys sorts keys in the library's key order and reports whether that
// order is certain. Without digits, keyLess compares the first differing
// bytes alone (letters after the others, each kind by code): a total
// order, so the sorted keys are the library's. With digits it is not
// always one (a run of digits compares by value with a run on the other
// side, but a letter sorts after a digit, so "1k" < "9", "9" < "19" and
// "19" < "1k"): then the library's own order depends on its sort, and
// the keys are only certain when every pair is in keyLess's order.
func sortKeys(keys []string, digits bool) bool {
	slices.SortFunc(keys, func(a, b string) int {
		switch {
		case keyLess(a, b):
			return -1
		case keyLess(b, a):
			return 1
		}
		return strings.Compare(a, b)
	})
	if !digits {
		return true
	}
	if len(keys) > maxDigitKeys {
		return false
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if !keyLess(keys[i], keys[j]) {
				return false
			}
		}
	}
	return true
}

// asciiKey reports whether k is printable ASCII, the keys keyLess orders
// as the library does.
func asciiKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// keyLess is the library's order of two printable-ASCII map keys
// (sorter.go keyList.Less): at the first byte where they differ, a
// letter sorts after a byte that is none, two letters or two other bytes
// by their code; where digits are involved, the runs of digits that
// start there compare by their value (a run after a non-zero digit
// counts one more), then the shorter run first, then by the bytes. A key
// that is a prefix of the other sorts first.
func keyLess(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		la, lb := isLetter(ca), isLetter(cb)
		if la && lb {
			return ca < cb
		}
		if la || lb {
			return lb
		}
		var na, nb int64
		if ca == '0' || cb == '0' {
			for j := i - 1; j >= 0 && isDigit(a[j]); j-- {
				if a[j] != '0' {
					na, nb = 1, 1
					break
				}
			}
		}
		ea, eb := i, i
		for ; ea < len(a) && isDigit(a[ea]); ea++ {
			na = na*10 + int64(a[ea]-'0')
		}
		for ; eb < len(b) && isDigit(b[eb]); eb++ {
			nb = nb*10 + int64(b[eb]-'0')
		}
		if na != nb {
			return na < nb
		}
		if ea != eb {
			return ea < eb
		}
		return ca < cb
	}
	return len(a) < len(b)
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
