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
	"encoding/base64"
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
		re:     regexp.MustCompile(`(?:^|[^a-z0-9])([a-z0-9]{6}\.[a-z0-9]{16})(?:[^a-z0-9]|$)`),
		group:  1,
		advice: "whoever can read it can join machines to the cluster; store it in Secret Manager, reference it with cluster.joinToken.secretManager, and delete this one (kubeadm token delete with the 6 characters before its dot)",
	},
	{
		// A PEM private key block (PKCS#1 "RSA PRIVATE KEY", SEC 1 "EC
		// PRIVATE KEY", PKCS#8 "PRIVATE KEY" and "ENCRYPTED PRIVATE KEY",
		// "OPENSSH PRIVATE KEY", ...) from its BEGIN line to its END line
		// (or the end of the text). Limits: a key in DER or without its
		// BEGIN line is not recognised, except as base64 of a PEM block.
		class:  "private key",
		re:     regexp.MustCompile(`-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY)-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----)?`),
		detail: 1,
		advice: moveAdvice,
	},
	{
		// The private_key_id of a Google service-account key file: 40 hex
		// digits after "private_key_id" and a ':' or '=' (JSON, YAML, CUE,
		// HCL, env). Limits: the id alone, without its field name, is just
		// a hex string and passes.
		class:  "service-account key id",
		re:     regexp.MustCompile(`private_key_id["']?\s*[:=]\s*["']?([0-9a-f]{40})`),
		group:  1,
		advice: "it names a service-account key, which belongs in Secret Manager, not here; revoke the key (gcloud iam service-accounts keys delete) and use the instances' attached service account instead",
	},
	{
		// The "type": "service_account" field of a Google service-account
		// key file (JSON or YAML). Limits: it finds key files, not the
		// other credential files (authorized_user, external_account).
		class:  "service-account key file",
		re:     regexp.MustCompile(`["']?type["']?\s*:\s*["']?service_account["']?`),
		advice: "a service-account key file belongs in Secret Manager, not here; revoke the key (gcloud iam service-accounts keys delete) and use the instances' attached service account instead",
	},
	{
		// A Google API key: "AIza" and 35 more characters of [0-9A-Za-z_-].
		// Limits: other clouds' API keys have other shapes.
		class:  "Google API key",
		re:     regexp.MustCompile(`(?:^|[^0-9A-Za-z_-])(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)`),
		group:  1,
		advice: moveAdvice,
	},
	{
		// A Google OAuth 2.0 access token ("ya29." and at least 20 more
		// characters). Limits: tokens of other identity providers (JWTs)
		// are not recognised.
		class:  "OAuth access token",
		re:     regexp.MustCompile(`(?:^|[^0-9A-Za-z_.-])(ya29\.[0-9A-Za-z_.-]{20,})`),
		group:  1,
		advice: moveAdvice,
	},
	{
		// A Google OAuth 2.0 refresh token ("1//" and at least 30 more
		// characters of [0-9A-Za-z_-]), not after a ':' or '/' (so not the
		// "//" of a URL). Limits: as for access tokens.
		class:  "OAuth refresh token",
		re:     regexp.MustCompile(`(?:^|[^0-9A-Za-z:/_-])(1//[0-9A-Za-z_-]{30,})`),
		group:  1,
		advice: moveAdvice,
	},
	{
		// A password in the userinfo of a URL, scheme://user:password@host.
		// Limits: a URL whose password is itself a reference (${VAR}) is
		// still reported; a user without a password (user@host) is not.
		class:  "password in a URL",
		re:     regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@"'<>]+:([^/\s@"'<>]+)@`),
		group:  1,
		advice: "put the credential in the consumer's own credential store (for an image, a registry credential on the node or an imagePullSecret) and remove it from the reference",
	},
	{
		// Credentials in front of a host without a scheme, as in an image
		// reference user:token@registry.example.com/image: a name, ':', a
		// secret, '@' and a dotted host name. Limits: the host must contain
		// a dot, so that "image:tag@sha256:..." (a tag and a digest) is not
		// taken for credentials; user:secret@localhost passes.
		class:  "password before a host name",
		re:     regexp.MustCompile(`(?:^|[\s"'=,(\[])[^\s/:@"'=,()\[\]]+:([^\s/:@"'=,()\[\]]+)@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::[0-9]{1,5})?(?:[/\s"',)\]]|$)`),
		group:  1,
		advice: "put the credential in the consumer's own credential store (for an image, a registry credential on the node or an imagePullSecret) and remove it from the reference",
	},
}

// base64Run is a run of base64 (standard or URL alphabet) long enough to
// hold the shortest secret above (a 23-character bootstrap token is 31
// characters of base64 and one '='). Each run is decoded and the result scanned once
// more with every pattern. Limits: base64 split across lines or strings,
// or nested encodings, are not decoded.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{28,}={0,2}`)

// Secret is one credential found in a text.
type Secret struct {
	// Class names the kind of credential.
	Class string
	// Start and End are the byte offsets of the secret in the scanned
	// text (of the base64 run it was decoded from, if Encoded).
	Start, End int
	// Encoded says the secret was found in the base64 decoding of the
	// text at Start:End.
	Encoded bool
	value   string
	detail  string
	advice  string
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
		class = "base64-encoded " + class
	}
	return fmt.Sprintf("%s %s (%s) must not be %s: %s", article(class), class, s.Fingerprint(), where, s.advice)
}

func article(s string) string {
	if strings.ContainsRune("aeiouAEIOU", rune(s[0])) {
		return "an"
	}
	return "a"
}

// Find returns every secret in text, ordered by position.
func Find(text string) []Secret {
	found := find(text)
	for _, m := range base64Run.FindAllStringIndex(text, -1) {
		decoded, ok := decodeBase64(text[m[0]:m[1]])
		if !ok {
			continue
		}
		for _, s := range find(decoded) {
			if overlaps(found, m[0], m[1]) {
				break
			}
			s.Start, s.End, s.Encoded = m[0], m[1], true
			found = append(found, s)
			break // one finding per run is enough
		}
	}
	slices.SortFunc(found, func(a, b Secret) int { return a.Start - b.Start })
	return found
}

// find runs the patterns over text, each place reported once.
func find(text string) []Secret {
	var found []Secret
	for _, p := range patterns {
		for _, m := range p.re.FindAllStringSubmatchIndex(text, -1) {
			start, end := m[2*p.group], m[2*p.group+1]
			if overlaps(found, start, end) {
				continue
			}
			sec := Secret{Class: p.class, Start: start, End: end, value: text[start:end], advice: p.advice}
			if p.detail > 0 {
				sec.detail = text[m[2*p.detail]:m[2*p.detail+1]]
			}
			found = append(found, sec)
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

// decodeBase64 decodes a run in any of the four base64 variants and keeps
// the result only when it is text (a decoded secret is text; random bytes
// that happen to be base64, such as a hex digest, decode to binary).
func decodeBase64(run string) (string, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(run)
		if err != nil {
			continue
		}
		if !utf8.Valid(b) || strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 && r != '\n' && r != '\r' && r != '\t' }) {
			return "", false
		}
		return string(b), true
	}
	return "", false
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
		if s.Encoded {
			b.WriteString(Fingerprint(text[s.Start:s.End]))
		} else {
			b.WriteString(s.Fingerprint())
		}
		last = s.End
	}
	b.WriteString(text[last:])
	return b.String()
}
