// Package secrets finds credentials in text: in what the user wrote, in
// the values CUE resolved, and in every rendered artifact. It reports a
// secret only by a redacted fingerprint (a few leading characters and a
// sha256 prefix), never the secret itself.
//
// The patterns are a table (see patterns): each catches one well-defined
// shape of credential; none of them is a general entropy detector, so a
// secret of no known shape (a plain password in a free-text field) passes.
package secrets

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// pattern is one kind of credential.
type pattern struct {
	// class names the credential in messages.
	class string
	// re finds it; the submatch group (0: the whole match) is the secret,
	// the part the fingerprint is taken of.
	re    *regexp.Regexp
	group int
	// detail, when not 0, is a submatch group that is not secret and
	// says more than class (a PEM block's type); the fingerprint then
	// shows no leading characters, which would be the same for every
	// secret of the class.
	detail int
	// advice says what to do instead.
	advice string
	// hint is a literal every match contains; re runs only on a window
	// of before bytes ahead of and after bytes behind each occurrence, so
	// that a large text costs a substring search, not a regexp run. Empty
	// hint: find is used instead.
	hint          string
	before, after int
	// find, when set, finds the secrets itself (start, end of each).
	find func(text string) [][2]int
	// pre, when set, is a cheap test of the hint at text[at:] that must
	// hold for re to be worth running there.
	pre func(text string, at int) bool
}

// isSep ends a word for the credential patterns.
func isSep(c byte) bool { return strings.IndexByte(" \t\r\n\"'=,()[]<>", c) >= 0 }

// notUserinfo are the words before a ':' that make "word:name@host" an
// identity, not credentials: Google IAM members (user:alice@example.com,
// serviceAccount:…, group:…, domain:…, deleted:…, principal:…) and mailto.
var notUserinfo = map[string]bool{
	"user": true, "serviceAccount": true, "group": true, "domain": true, "deleted": true,
	"principal": true, "principalSet": true, "mailto": true,
}

// userinfoBefore: an '@' at at has "name:secret" right before it, and
// name is not an IAM member type.
func userinfoBefore(text string, at int) bool {
	colon := -1
	for k := at - 1; k >= 0 && at-k <= 256; k-- {
		c := text[k]
		if c == ':' && colon < 0 {
			if k == at-1 {
				return false
			}
			colon = k
			continue
		}
		if isSep(c) || c == '/' || c == '@' || c == ':' {
			return colon > k+1 && !notUserinfo[text[k+1:colon]]
		}
		if k == 0 {
			return colon > 0 && !notUserinfo[text[:colon]]
		}
	}
	return false
}

// typeBefore: the "service_account" at at is the value of a field
// "type" (only quotes, blanks and one ':' between them).
func typeBefore(text string, at int) bool {
	k := strings.LastIndex(text[max(0, at-64):at], "type")
	if k < 0 {
		return false
	}
	return strings.Trim(text[max(0, at-64)+k+len("type"):at], "\"' \t:") == "" && strings.Count(text[max(0, at-64)+k:at], ":") == 1
}

// userinfoAfter: the "://" at at is followed by userinfo (an '@' before
// the path).
func userinfoAfter(text string, at int) bool {
	for k := at + 3; k < len(text) && k-at <= 256; k++ {
		switch c := text[k]; {
		case c == '@':
			return true
		case isSep(c) || c == '/':
			return false
		}
	}
	return false
}

const moveAdvice = "keep it in Secret Manager (or another secret store), revoke this one, and reference the store from your own tooling"

// patterns is every kind of credential the scanner knows, most specific
// first (one place in a text is reported once, by the first pattern that
// covers it).
var patterns = []pattern{
	{
		// A kubeadm bootstrap token, [a-z0-9]{6}.[a-z0-9]{16}
		// (k8s.io/cluster-bootstrap's BootstrapTokenPattern), not embedded
		// in a longer run of letters and digits. Limits: a host or file
		// name of exactly that shape (6 and 16 lowercase letters or digits
		// around a dot) is taken for a token.
		class:  "kubeadm bootstrap token",
		find:   bootstrapTokens,
		advice: "whoever can read it can join machines to the cluster; store it in Secret Manager, reference it with cluster.joinToken.secretManager, and delete this one (kubeadm token delete with the 6 characters before its dot)",
	},
	{
		// A PEM private key block (PKCS#1 "RSA PRIVATE KEY", SEC 1 "EC
		// PRIVATE KEY", PKCS#8 "PRIVATE KEY" and "ENCRYPTED PRIVATE KEY",
		// "OPENSSH PRIVATE KEY", ...) from its BEGIN line to its END line
		// (or the end of the text). A body without its BEGIN line, and a
		// lone END line, are found too (disguise.go).
		class:  privateKeyClass,
		re:     regexp.MustCompile(`-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY)-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----)?`),
		detail: 1,
		advice: moveAdvice,
		hint:   "-----BEGIN ", after: 64 << 10,
	},
	{
		// The private_key_id of a Google service-account key file: 40 hex
		// digits after "private_key_id" and a ':' or '=' (JSON, YAML, CUE,
		// HCL, env). Limits: the id alone, without its field name, is just
		// a hex string and passes.
		class: "service-account key id",
		re:    regexp.MustCompile(`private_key_id["']?\s*[:=]\s*["']?([0-9a-f]{40})`),
		group: 1,
		hint:  "private_key_id", after: 128,
		advice: "it names a service-account key, which belongs in Secret Manager, not here; revoke the key (gcloud iam service-accounts keys delete) and use the instances' attached service account instead",
	},
	{
		// The "type": "service_account" field of a Google service-account
		// key file (JSON or YAML). Limits: it finds key files, not the
		// other credential files (authorized_user, external_account).
		class: "service-account key file",
		re:    regexp.MustCompile(`["']?type["']?\s*:\s*["']?service_account["']?`),
		hint:  "service_account", before: 64, after: 1,
		pre:    typeBefore,
		advice: "a service-account key file belongs in Secret Manager, not here; revoke the key (gcloud iam service-accounts keys delete) and use the instances' attached service account instead",
	},
	{
		// A Google API key: "AIza" and 35 more characters of [0-9A-Za-z_-].
		// Limits: other clouds' API keys have other shapes.
		class: "Google API key",
		re:    regexp.MustCompile(`(?:^|[^0-9A-Za-z_-])(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)`),
		group: 1,
		hint:  "AIza", before: 1, after: 36,
		advice: moveAdvice,
	},
	{
		// A Google OAuth 2.0 access token ("ya29." and at least 20 more
		// characters). Limits: tokens of other identity providers (JWTs)
		// are not recognised.
		class: "OAuth access token",
		re:    regexp.MustCompile(`(?:^|[^0-9A-Za-z_.-])(ya29\.[0-9A-Za-z_.-]{20,})`),
		group: 1,
		hint:  "ya29.", before: 1, after: 4 << 10,
		advice: moveAdvice,
	},
	{
		// A Google OAuth 2.0 refresh token ("1//" and at least 30 more
		// characters of [0-9A-Za-z_-]), not after a ':' or '/' (so not the
		// "//" of a URL). Limits: as for access tokens.
		class: "OAuth refresh token",
		re:    regexp.MustCompile(`(?:^|[^0-9A-Za-z:/_-])(1//[0-9A-Za-z_-]{30,})`),
		group: 1,
		hint:  "1//", before: 1, after: 4 << 10,
		advice: moveAdvice,
	},
	{
		// A password in the userinfo of a URL, scheme://user:password@host.
		// Limits: a URL whose password is itself a reference (${VAR}) is
		// still reported; a user without a password (user@host) is not.
		class: "password in a URL",
		re:    regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@"'<>]+:([^/\s@"'<>]+)@`),
		group: 1,
		hint:  "://", before: 64, after: 256,
		pre:    userinfoAfter,
		advice: "put the credential in the consumer's own credential store (for an image, a registry credential on the node or an imagePullSecret) and remove it from the reference",
	},
	{
		// Credentials in front of a host without a scheme, as in an image
		// reference user:token@registry.example.com/image: a name, ':', a
		// secret, '@' and a dotted host name. Limits: the host must contain
		// a dot, so that "image:tag@sha256:..." (a tag and a digest) is not
		// taken for credentials; user:secret@localhost passes, and so do
		// IAM members (user:alice@example.com, serviceAccount:…) and
		// mailto:, which have this shape but are identities.
		class: "password before a host name",
		re:    regexp.MustCompile(`(?:^|[\s"'=,(\[])[^\s/:@"'=,()\[\]]+:([^\s/:@"'=,()\[\]]+)@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::[0-9]{1,5})?(?:[/\s"',)\]]|$)`),
		group: 1,
		hint:  "@", before: 256, after: 128,
		pre:    userinfoBefore,
		advice: "put the credential in the consumer's own credential store (for an image, a registry credential on the node or an imagePullSecret) and remove it from the reference",
	},
}

const (
	privateKeyClass  = "private key"
	privateKeyAdvice = moveAdvice
)

// minBase64 is the shortest run of base64 (standard or URL alphabet) that
// can hold the shortest secret above (a 23-character bootstrap token is 31
// characters of base64 and one '='). Each run is decoded and the result scanned once
// more with every pattern (disguise.go: nested encodings and wrapped lines
// too).
const minBase64 = 28

// base64Runs finds the runs of base64 characters of at least minBase64
// characters, with their '=' padding.
func base64Runs(text string) [][2]int {
	runs := charRuns(text, &base64Class, minBase64)
	for i, r := range runs {
		end := r[1]
		for end < len(text) && end-r[1] < 2 && text[end] == '=' {
			end++
		}
		runs[i][1] = end
	}
	return runs
}

// charRuns finds the maximal runs of text of at least min bytes that class
// holds. A lookup table, not a function per byte: every artifact goes
// through here several times.
func charRuns(text string, class *[256]bool, min int) [][2]int {
	var runs [][2]int
	for i := 0; i < len(text); {
		if !class[text[i]] {
			i++
			continue
		}
		start := i
		for i < len(text) && class[text[i]] {
			i++
		}
		if i-start >= min {
			runs = append(runs, [2]int{start, i})
		}
	}
	return runs
}

// base64Class and hexClass are the bytes of base64 (all four alphabets,
// without the padding) and of hex digits.
var base64Class, hexClass = func() (b, h [256]bool) {
	for c := range 256 {
		b[c] = isBase64(byte(c))
		h[c] = isHex(byte(c))
	}
	return b, h
}()

func isBase64(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-'
}

// bootstrapTokens finds [a-z0-9]{6}.[a-z0-9]{16} not embedded in a longer
// run of lower-case letters and digits.
func bootstrapTokens(text string) [][2]int {
	var out [][2]int
	for i := 0; ; {
		j := strings.IndexByte(text[i:], '.')
		if j < 0 {
			return out
		}
		dot := i + j
		i = dot + 1
		start, end := dot-6, dot+17
		if start < 0 || end > len(text) || (start > 0 && isTokenChar(text[start-1])) || (end < len(text) && isTokenChar(text[end])) {
			continue
		}
		if allTokenChars(text[start:dot]) && allTokenChars(text[dot+1:end]) {
			out = append(out, [2]int{start, end})
		}
	}
}

func isTokenChar(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func allTokenChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

// Secret is one credential found in a text.
type Secret struct {
	// Class names the kind of credential.
	Class string
	// Start and End are the byte offsets of the secret in the scanned
	// text (of the base64 run it was decoded from, if Encoded).
	Start, End int
	// Encoded says the secret was found in the decoding of the text at
	// Start:End; Encoding names the encodings, outermost first
	// ("base64", "hex", "base64+base64").
	Encoded  bool
	Encoding string
	// Disguised says the secret was found once look-alike characters were
	// mapped to what they look like and invisible ones removed.
	Disguised bool
	value     string
	detail    string
	advice    string
}

// Fingerprint names the secret without revealing it: at most its first 4
// characters (fewer for a short secret) and the first 8 hex digits of its
// sha256, e.g. "abcd… sha256:3f2a9c1e"; for a class whose secrets all
// start alike (PEM blocks), what the block is and the hash.
func (s Secret) Fingerprint() string {
	if s.detail != "" {
		h := sha256.Sum256([]byte(s.value))
		return s.detail + ", sha256:" + hex.EncodeToString(h[:4])
	}
	return Fingerprint(s.value)
}

// Fingerprint is the fingerprint of any string (see Secret.Fingerprint).
func Fingerprint(secret string) string {
	h := sha256.Sum256([]byte(secret))
	n := min(4, len(secret)/4)
	for n > 0 && !utf8.RuneStart(secret[n]) {
		n--
	}
	return secret[:n] + "… sha256:" + hex.EncodeToString(h[:4])
}

// Describe is the message about the secret: its class and fingerprint,
// that it must not be where (e.g. "in the source"), and what to do.
func (s Secret) Describe(where string) string {
	class := s.Class
	if s.Encoded {
		class = s.Encoding + "-encoded " + class
	}
	if s.Disguised {
		class += " written with look-alike or invisible characters"
	}
	return fmt.Sprintf("%s %s (%s) must not be %s: %s", article(class), class, s.Fingerprint(), where, s.advice)
}

func article(s string) string {
	if strings.ContainsRune("aeiouAEIOU", rune(s[0])) {
		return "an"
	}
	return "a"
}

// Find returns every secret in text, ordered by position: plain, and
// through the disguises disguise.go lists (encodings, wrapping, a PEM body
// without its BEGIN line, look-alike and invisible characters).
func Find(text string) []Secret {
	found := findLayers(text, 0)
	if n, offs, changed := normalize(text); changed {
		for _, s := range findLayers(n, 0) {
			start, end := offs[s.Start], offs[s.End]
			if overlaps(found, start, end) {
				continue
			}
			s.Start, s.End, s.Disguised = start, end, true
			found = append(found, s)
		}
	}
	slices.SortFunc(found, func(a, b Secret) int { return a.Start - b.Start })
	return found
}

// findLayers is find, plus what the encoded runs of text decode to, depth
// encodings deep.
func findLayers(text string, depth int) (found []Secret) {
	found = find(text)
	defer func() { found = endLines(text, found) }()
	if depth >= maxLayers {
		return found
	}
	for _, e := range encodedRuns(text) {
		if overlaps(found, e.start, e.end) {
			continue
		}
		if e.der != nil && privateKeyDER(e.der) {
			found = append(found, Secret{Class: privateKeyClass, Start: e.start, End: e.end, value: e.raw, detail: "a PEM private key body without its BEGIN line", advice: privateKeyAdvice})
			continue
		}
		if e.text == "" {
			continue
		}
		inner := findLayers(e.text, depth+1)
		if len(inner) == 0 {
			continue
		}
		s := inner[0] // one finding per run is enough
		how := e.how
		if s.Encoded {
			how += "+" + s.Encoding
		}
		s.Start, s.End, s.Encoded, s.Encoding = e.start, e.end, true, how
		found = append(found, s)
	}
	return found
}

// endLines adds to found the lone END lines of PEM private keys in text,
// each joined to the key body found right before it.
func endLines(text string, found []Secret) []Secret {
	for _, m := range pemEndLines(text) {
		if overlaps(found, m[0], m[1]) {
			continue
		}
		joined := false
		for i := range found {
			s := &found[i]
			if s.Class == privateKeyClass && s.End <= m[0] && strings.TrimSpace(text[s.End:m[0]]) == "" {
				s.End, s.value, joined = m[1], s.value+"\n"+text[m[0]:m[1]], true
				break
			}
		}
		if !joined {
			found = append(found, Secret{Class: privateKeyClass, Start: m[0], End: m[1], value: text[m[0]:m[1]], detail: "the END line of a PEM private key", advice: privateKeyAdvice})
		}
	}
	return found
}

// find runs the patterns over text, each place reported once.
func find(text string) []Secret {
	var found []Secret
	add := func(p pattern, start, end int, detail string) {
		if overlaps(found, start, end) {
			return
		}
		found = append(found, Secret{Class: p.class, Start: start, End: end, value: text[start:end], detail: detail, advice: p.advice})
	}
	for _, p := range patterns {
		if p.find != nil {
			for _, m := range p.find(text) {
				add(p, m[0], m[1], "")
			}
			continue
		}
		for from := 0; ; {
			j := strings.Index(text[from:], p.hint)
			if j < 0 {
				break
			}
			at := from + j
			from = at + len(p.hint)
			if p.pre != nil && !p.pre(text, at) {
				continue
			}
			lo, hi := max(0, at-p.before), min(len(text), at+len(p.hint)+p.after)
			if p.before > 1 && lo > 0 {
				// Start the window at a separator, so that the pattern's
				// own start-of-text anchor does not match mid-word.
				k := strings.IndexAny(text[lo:at], " \t\r\n\"'=,([")
				if k < 0 {
					continue
				}
				lo += k
			}
			for _, m := range p.re.FindAllStringSubmatchIndex(text[lo:hi], -1) {
				detail := ""
				if p.detail > 0 {
					detail = text[lo+m[2*p.detail] : lo+m[2*p.detail+1]]
				}
				add(p, lo+m[2*p.group], lo+m[2*p.group+1], detail)
			}
		}
	}
	return found
}

func overlaps(found []Secret, start, end int) bool {
	for _, s := range found {
		if start < s.End && s.Start < end {
			return true
		}
	}
	return false
}

// Redact replaces every secret in text by its fingerprint, so that a
// message that quotes a value (a label key, a group name, CUE's own
// errors) never prints a secret.
func Redact(text string) string {
	found := Find(text)
	if len(found) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for _, s := range found {
		if s.Start < last {
			continue
		}
		b.WriteString(text[last:s.Start])
		if s.Encoded || s.Disguised {
			b.WriteString(Fingerprint(text[s.Start:s.End]))
		} else {
			b.WriteString(s.Fingerprint())
		}
		last = s.End
	}
	b.WriteString(text[last:])
	return b.String()
}
