package yamlout

import (
	"strconv"
	"unicode/utf8"
)

// jsonTree decodes the JSON encoding/json.Marshal writes into the tree
// fromJSON builds with encoding/json (string-keyed maps, lists, strings,
// booleans, nulls, whole numbers as int), without encoding/json's
// reflection. ok is false when j holds anything this reader leaves to
// encoding/json: white space, a number that is not a whole one of at most
// maxExactInt in magnitude, a string escape other than those Marshal
// writes for quotes, backslashes, control characters and HTML-sensitive
// or line-separating characters (\u escapes of the Basic Multilingual
// Plane outside the surrogates), invalid UTF-8, a key twice in an object,
// or anything after the value.
func jsonTree(j []byte) (tree any, ok bool) {
	r := jsonReader{j: j}
	v, ok := r.value(0)
	if !ok || r.i != len(j) {
		return nil, false
	}
	return v, true
}

type jsonReader struct {
	j []byte
	i int
}

// maxJSONDepth bounds the nesting the reader follows (deeper documents go
// to encoding/json).
const maxJSONDepth = 1000

func (r *jsonReader) value(depth int) (any, bool) {
	if r.i >= len(r.j) || depth > maxJSONDepth {
		return nil, false
	}
	switch c := r.j[r.i]; {
	case c == '{':
		r.i++
		m := map[string]any{}
		if r.peek('}') {
			return m, true
		}
		for {
			k, ok := r.str()
			if !ok || !r.peek(':') {
				return nil, false
			}
			if _, dup := m[k]; dup {
				return nil, false
			}
			v, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			if r.peek('}') {
				return m, true
			}
			if !r.peek(',') {
				return nil, false
			}
		}
	case c == '[':
		r.i++
		l := []any{}
		if r.peek(']') {
			return l, true
		}
		for {
			v, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
			if r.peek(']') {
				return l, true
			}
			if !r.peek(',') {
				return nil, false
			}
		}
	case c == '"':
		return r.str()
	case c == 't':
		return true, r.word("true")
	case c == 'f':
		return false, r.word("false")
	case c == 'n':
		return nil, r.word("null")
	case c == '-' || '0' <= c && c <= '9':
		return r.number()
	}
	return nil, false
}

// peek consumes c if it comes next.
func (r *jsonReader) peek(c byte) bool {
	if r.i < len(r.j) && r.j[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *jsonReader) word(w string) bool {
	if len(r.j)-r.i >= len(w) && string(r.j[r.i:r.i+len(w)]) == w {
		r.i += len(w)
		return true
	}
	return false
}

// number reads a whole number written as encoding/json writes an integer
// (an optional '-', digits, no leading zero).
func (r *jsonReader) number() (any, bool) {
	start := r.i
	if r.j[r.i] == '-' {
		r.i++
	}
	digits := r.i
	for r.i < len(r.j) && '0' <= r.j[r.i] && r.j[r.i] <= '9' {
		r.i++
	}
	if r.i == digits || r.j[digits] == '0' && r.i-digits > 1 {
		return nil, false
	}
	if r.i < len(r.j) {
		if c := r.j[r.i]; c == '.' || c == 'e' || c == 'E' {
			return nil, false
		}
	}
	n, err := strconv.ParseInt(string(r.j[start:r.i]), 10, 64)
	if err != nil || n > maxExactInt || n < -maxExactInt {
		return nil, false
	}
	return int(n), true
}

// str reads a string.
func (r *jsonReader) str() (string, bool) {
	if !r.peek('"') {
		return "", false
	}
	start := r.i
	for r.i < len(r.j) {
		c := r.j[r.i]
		switch {
		case c == '"':
			s := r.j[start:r.i]
			r.i++
			if !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\':
			return r.escaped(start)
		case c < 0x20:
			return "", false
		}
		r.i++
	}
	return "", false
}

// escaped reads the rest of a string that holds an escape, from its
// start.
func (r *jsonReader) escaped(start int) (string, bool) {
	b := append([]byte(nil), r.j[start:r.i]...)
	for r.i < len(r.j) {
		c := r.j[r.i]
		switch {
		case c == '"':
			r.i++
			if !utf8.Valid(b) {
				return "", false
			}
			return string(b), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b = append(b, c)
			r.i++
			continue
		}
		if r.i+1 >= len(r.j) {
			return "", false
		}
		switch e := r.j[r.i+1]; e {
		case '"', '\\':
			b = append(b, e)
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'u':
			if r.i+6 > len(r.j) {
				return "", false
			}
			n, err := strconv.ParseUint(string(r.j[r.i+2:r.i+6]), 16, 16)
			if err != nil || 0xd800 <= n && n <= 0xdfff {
				return "", false
			}
			b = utf8.AppendRune(b, rune(n))
			r.i += 6
			continue
		default:
			return "", false
		}
		r.i += 2
	}
	return "", false
}
