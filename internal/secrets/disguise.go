package secrets

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The disguises Find sees through, besides a plain secret:
//   - base64 (any of the four alphabets and paddings), also nested up to
//     maxLayers encodings deep, and hex of text (hex of random bytes, a
//     digest or a key id, decodes to binary and is left alone);
//   - base64 wrapped over several lines (a PEM body, a wrapped blob);
//   - a PEM private key body without its BEGIN line: base64 lines whose
//     decoding parses as a PKCS#1, PKCS#8 or SEC 1 private key, or the
//     "openssh-key-v1" body of an OpenSSH key, and a lone END line of a
//     private key;
//   - look-alike characters: text is normalised with Unicode NFKC (which
//     maps full-width and other compatibility forms, such as U+FF0E for
//     '.', to ASCII) and without invisible characters (zero-width space,
//     joiners, word joiner, soft hyphen, byte-order mark), then scanned.
// Not seen through: letters of other scripts that only look like Latin
// ones (Cyrillic 'а' for 'a': no normalisation maps them), encryption, and
// encodings other than base64 and hex.

// maxLayers is how many encodings deep Find decodes.
const maxLayers = 3

// minHex is the shortest run of hex digits decoded: the hex of the
// shortest secret (a 23-character bootstrap token) is 46 digits.
const minHex = 46

// encoded is one decoded run of text: where it was, how it was encoded,
// and what it decodes to.
type encoded struct {
	start, end int
	how        string // "base64", "hex"
	raw        string // the encoded characters alone (no line breaks or indentation)
	text       string // the decoding, when it is text
	der        []byte // the decoding, when it is binary (base64 only)
}

// encodedRuns finds every run of text that decodes: base64 runs, hex runs,
// and base64 wrapped over consecutive lines.
func encodedRuns(text string) []encoded {
	var out []encoded
	b64 := base64Runs(text)
	for _, m := range b64 {
		e := encoded{start: m[0], end: m[1], how: "base64", raw: text[m[0]:m[1]]}
		e.text, e.der = decodeBase64Any(e.raw)
		out = append(out, e)
	}
	for _, m := range hexRuns(text, b64) {
		b, err := hex.DecodeString(text[m[0]:m[1]])
		if err == nil && isText(b) {
			out = append(out, encoded{start: m[0], end: m[1], how: "hex", raw: text[m[0]:m[1]], text: string(b)})
		}
	}
	for _, m := range wrappedBase64(text) {
		e := encoded{start: m[0], end: m[1], how: "base64"}
		joined := strings.Map(func(r rune) rune {
			if r < utf8.RuneSelf && isBase64(byte(r)) || r == '=' {
				return r
			}
			return -1
		}, text[m[0]:m[1]])
		e.raw = joined
		e.text, e.der = decodeBase64Any(joined)
		out = append(out, e)
	}
	return out
}

// decodeBase64Any decodes run in any base64 variant: as text when the
// result is text, else as bytes.
func decodeBase64Any(run string) (string, []byte) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(run)
		if err != nil {
			continue
		}
		if isText(b) {
			return string(b), nil
		}
		return "", b
	}
	return "", nil
}

func isText(b []byte) bool {
	return utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 && r != '\n' && r != '\r' && r != '\t' })
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// hexRuns finds runs of an even number, at least minHex, of hex digits.
// Hex digits are base64 characters, and minHex is more than minBase64, so
// every such run lies inside one of b64, text's base64 runs: only those
// are searched.
func hexRuns(text string, b64 [][2]int) [][2]int {
	var runs [][2]int
	for _, r := range b64 {
		if r[1]-r[0] < minHex {
			continue
		}
		for _, h := range charRuns(text[r[0]:r[1]], &hexClass, minHex) {
			if (h[1]-h[0])%2 == 0 {
				runs = append(runs, [2]int{r[0] + h[0], r[0] + h[1]})
			}
		}
	}
	return runs
}

// wrappedBase64 finds base64 wrapped over two or more consecutive lines:
// lines that hold nothing but base64 characters (with padding at the end
// of the last, and indentation, quotes or a comment marker around them),
// all but the last of one length of at least 16.
func wrappedBase64(text string) [][2]int {
	var runs [][2]int
	type line struct {
		start, end int // of the base64 in text
	}
	var cur []line
	flush := func() {
		if len(cur) >= 2 {
			runs = append(runs, [2]int{cur[0].start, cur[len(cur)-1].end})
		}
		cur = cur[:0]
	}
	for pos := 0; pos < len(text); {
		nl := strings.IndexByte(text[pos:], '\n')
		end := len(text)
		if nl >= 0 {
			end = pos + nl
		}
		s, e := pos, end
		// Indentation, quotes and comment markers; a "/" only as part of
		// "//" or "/*" before a blank, since a base64 line may start
		// with "/".
		for s < e {
			if strings.IndexByte(" \t\"'#*", text[s]) >= 0 {
				s++
			} else if e-s >= 3 && (text[s:s+2] == "//" || text[s:s+2] == "/*") && (text[s+2] == ' ' || text[s+2] == '\t') {
				s += 2
			} else {
				break
			}
		}
		// Trailing blanks, quotes, commas and an escaped newline ("\n"
		// as two characters, in a JSON or YAML string); never a single
		// 'n' or '\', which a base64 line may end in.
		for e > s {
			if strings.IndexByte(" \t\r\"',", text[e-1]) >= 0 {
				e--
			} else if e-s >= 2 && text[e-2:e] == `\n` {
				e -= 2
			} else {
				break
			}
		}
		body := strings.TrimRight(text[s:e], "=")
		ok := len(body) >= 4 && !strings.ContainsFunc(body, func(r rune) bool { return r >= utf8.RuneSelf || !isBase64(byte(r)) })
		if ok && len(cur) > 0 {
			first := cur[0].end - cur[0].start
			prev := cur[len(cur)-1]
			if prev.end-prev.start != first || strings.HasSuffix(text[prev.start:prev.end], "=") {
				ok = false // only the last line may be shorter or padded
			}
		}
		switch {
		case ok && (len(cur) > 0 || e-s >= 16):
			cur = append(cur, line{s, e})
		default:
			flush()
			if ok && e-s >= 16 {
				cur = append(cur, line{s, e})
			}
		}
		pos = end + 1
	}
	flush()
	return runs
}

// privateKeyDER says whether b is a private key in DER (PKCS#1, PKCS#8 or
// SEC 1) or the body of an OpenSSH private key.
func privateKeyDER(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	if strings.HasPrefix(string(b), "openssh-key-v1\x00") {
		return true
	}
	if b[0] != 0x30 { // an ASN.1 SEQUENCE
		return false
	}
	if _, err := x509.ParsePKCS8PrivateKey(b); err == nil {
		return true
	}
	if _, err := x509.ParsePKCS1PrivateKey(b); err == nil {
		return true
	}
	_, err := x509.ParseECPrivateKey(b)
	return err == nil
}

// pemEndLine finds a lone "-----END … PRIVATE KEY-----" line: what is left
// of a PEM private key whose BEGIN line was cut away.
func pemEndLines(text string) [][2]int {
	var out [][2]int
	for from := 0; ; {
		i := strings.Index(text[from:], "-----END ")
		if i < 0 {
			return out
		}
		at := from + i
		from = at + 1
		rest := text[at:]
		j := strings.Index(rest[len("-----END "):], "-----")
		if j < 0 {
			return out
		}
		label := rest[len("-----END ") : len("-----END ")+j]
		if strings.HasSuffix(label, "PRIVATE KEY") && !strings.ContainsAny(label, "\n\r") {
			out = append(out, [2]int{at, at + len("-----END ") + j + 5})
		}
	}
}

// invisible are characters that render as nothing: a secret with one of
// them inside still works once someone copies it without them.
var invisible = []rune{'\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF', '\u00AD', '\u180E'}

// normalize returns text with look-alike characters mapped to what they
// look like (NFKC) and invisible ones removed, with offs mapping each byte
// offset of the result (and its end) to the offset in text; changed is
// false when text has nothing to normalise.
func normalize(text string) (out string, offs []int, changed bool) {
	if isASCII(text) {
		return text, nil, false
	}
	// A text already in NFKC has no character that NFKC maps on its own
	// (each such character makes a text not NFKC), so with no invisible
	// character either there is nothing to do: the common case of
	// non-ASCII text (a "×" or an "…" in the docs) costs a quick check,
	// not a copy.
	if norm.NFKC.IsNormalString(text) && !strings.ContainsFunc(text, func(r rune) bool { return slices.Contains(invisible, r) }) {
		return text, nil, false
	}
	var b strings.Builder
	offs = make([]int, 0, len(text)+1)
	for i, r := range text {
		if slices.Contains(invisible, r) {
			changed = true
			continue
		}
		s := string(r)
		if r >= utf8.RuneSelf {
			if n := norm.NFKC.String(s); n != s {
				s, changed = n, true
			}
		}
		for range len(s) {
			offs = append(offs, i)
		}
		b.WriteString(s)
	}
	offs = append(offs, len(text))
	return b.String(), offs, changed
}

// isASCII says whether text has no byte of 0x80 or more, eight bytes at a
// time: every artifact is checked before it is normalised.
func isASCII(text string) bool {
	i := 0
	for ; i+8 <= len(text); i += 8 {
		w := text[i : i+8]
		if (w[0]|w[1]|w[2]|w[3]|w[4]|w[5]|w[6]|w[7])&0x80 != 0 {
			return false
		}
	}
	for ; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
