package secrets

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"
)

const tok = "abcdef.0123456789abcdef"

// TestDisguises: each disguise of a secret is found, at the disguised text,
// and a redaction removes it.
func TestDisguises(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	block := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	body := strings.Join(strings.Split(block, "\n")[1:], "\n") // no BEGIN line
	bodyOnly := strings.Join(strings.Split(block, "\n")[1:len(strings.Split(block, "\n"))-2], "\n")
	ecDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ecBody := strings.Join(strings.Split(string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER})), "\n")[1:4], "\n")

	for _, c := range []struct {
		name, text, secret, class, encoding string
		disguised                           bool
	}{
		{"hex", "value: " + hex.EncodeToString([]byte(tok)) + "\n", hex.EncodeToString([]byte(tok)), "kubeadm bootstrap token", "hex", false},
		{"base64 twice", "x " + b64([]byte(b64([]byte(tok)))) + " y", b64([]byte(b64([]byte(tok)))), "kubeadm bootstrap token", "base64+base64", false},
		{"base64 three times", b64([]byte(b64([]byte(b64([]byte(tok)))))), b64([]byte(b64([]byte(b64([]byte(tok)))))), "kubeadm bootstrap token", "base64+base64+base64", false},
		{"hex of base64", hex.EncodeToString([]byte(b64([]byte(tok)))), hex.EncodeToString([]byte(b64([]byte(tok)))), "kubeadm bootstrap token", "hex+base64", false},
		{"PEM body and END line, no BEGIN", "key: |\n" + body, strings.TrimSuffix(body, "\n"), "private key", "", false},
		{"PEM body alone", bodyOnly, bodyOnly, "private key", "", false},
		{"SEC 1 body alone, indented", "    " + strings.ReplaceAll(ecBody, "\n", "\n    "), strings.ReplaceAll(ecBody, "\n", "\n    "), "private key", "", false},
		{"END line alone", "-----END RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "private key", "", false},
		{"full-width dot", "t: abcdef\uFF0E0123456789abcdef", "abcdef\uFF0E0123456789abcdef", "kubeadm bootstrap token", "", true},
		{"full-width letters", "t: ａｂｃｄｅｆ.0123456789abcdef", "ａｂｃｄｅｆ.0123456789abcdef", "kubeadm bootstrap token", "", true},
		{"zero-width space", "t: abcdef.01234\u200B56789abcdef end", "abcdef.01234\u200B56789abcdef", "kubeadm bootstrap token", "", true},
		{"soft hyphen", "abc\u00ADdef.0123456789abcdef", "abc\u00ADdef.0123456789abcdef", "kubeadm bootstrap token", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			found := Find(c.text)
			if len(found) != 1 {
				t.Fatalf("found %d secrets in %q, want 1: %+v", len(found), c.text, found)
			}
			s := found[0]
			if s.Class != c.class || s.Encoding != c.encoding || s.Disguised != c.disguised || s.Encoded != (c.encoding != "") {
				t.Errorf("class %q encoding %q disguised %v, want %q %q %v", s.Class, s.Encoding, s.Disguised, c.class, c.encoding, c.disguised)
			}
			if got := c.text[s.Start:s.End]; got != c.secret {
				t.Errorf("found at %q, want %q", got, c.secret)
			}
			if r := Redact(c.text); strings.Contains(r, c.secret) || strings.Contains(r, tok) {
				t.Errorf("the redaction keeps the secret: %q", r)
			}
		})
	}
}

// TestDisguisesFalsePositives: what looks like an encoding but holds no
// secret stays unreported: digests and key ids in hex, a certificate (a
// public document) wrapped in base64 lines, non-ASCII text.
func TestDisguisesFalsePositives(t *testing.T) {
	sum := sha256.Sum256([]byte("x"))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<31, 0)}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert}))
	for _, text := range []string{
		"sha256:" + hex.EncodeToString(sum[:]),
		hex.EncodeToString(sum[:]) + hex.EncodeToString(sum[:]),
		"private key id " + strings.Repeat("0123456789", 4),
		certPEM,
		strings.Join(strings.Split(certPEM, "\n")[1:], "\n"),
		"Grüße aus Köln — ＧＰＵ ノード",
		"image: registry.example.com/img@sha256:" + hex.EncodeToString(sum[:]),
	} {
		if found := Find(text); len(found) > 0 {
			t.Errorf("%q: found %+v", text, found)
		}
	}
}
