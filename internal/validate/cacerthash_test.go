package validate_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/validate"
)

// TestCACertHashCommand: the command vet's placeholder finding gives
// prints the pin kubeadm checks, for an RSA and an ECDSA CA alike:
// "sha256:" and the hex SHA-256 of the certificate's
// SubjectPublicKeyInfo (kubernetes/kubernetes, v1.35.0,
// cmd/kubeadm/app/util/pubkeypin/pubkeypin.go: Hash).
func TestCACertHashCommand(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed")
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]any{"rsa": rsaKey, "ecdsa": ecKey} {
		t.Run(name, func(t *testing.T) {
			tmpl := &x509.Certificate{
				SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
				NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
				IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
			}
			var pub any
			switch k := key.(type) {
			case *rsa.PrivateKey:
				pub = &k.PublicKey
			case *ecdsa.PrivateKey:
				pub = &k.PublicKey
			}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
			if err != nil {
				t.Fatal(err)
			}
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
			want := "sha256:" + hex.EncodeToString(sum[:])

			dir := t.TempDir()
			pki := filepath.Join(dir, "etc", "kubernetes", "pki")
			if err := os.MkdirAll(pki, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pki, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
				t.Fatal(err)
			}
			// The command names /etc/kubernetes/pki/ca.crt; run it on this CA.
			cmd := strings.ReplaceAll(validate.CACertHashCommand, "/etc/kubernetes/pki/ca.crt", filepath.Join(pki, "ca.crt"))
			out, err := exec.Command("bash", "-o", "pipefail", "-c", cmd).Output()
			if err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("the command prints %q, kubeadm's pin is %q", got, want)
			}
		})
	}
}
