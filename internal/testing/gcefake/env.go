package gcefake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// AccessToken is the OAuth token the fake metadata server hands out and
// the fake Compute API accepts.
const AccessToken = "ya29.gcefake-test-token"

// Env is a running fake: the Compute API behind TLS for the Google API
// host names, a CONNECT proxy that leads every HTTPS request to it, and a
// metadata server. A process reaches it as it reaches Google in
// production, with the environment of ProcessEnv.
type Env struct {
	Compute *Server
	// CAFile is a PEM file of the certificate authority that signed the
	// fake's serving certificate.
	CAFile string
	// ProxyURL is the HTTPS proxy (http://127.0.0.1:PORT).
	ProxyURL string
	// MetadataHost is the metadata server's host:port.
	MetadataHost string

	tlsAddr string
	mu      sync.Mutex
	tunnels []string // CONNECT targets asked for
}

// Start serves c on loopback until the test ends.
func Start(t testing.TB, c *Server) *Env {
	t.Helper()
	dir := t.TempDir()
	caPEM, cert, err := certificates(Hosts)
	if err != nil {
		t.Fatalf("gcefake: %v", err)
	}
	e := &Env{Compute: c, CAFile: filepath.Join(dir, "ca.pem")}
	if err := os.WriteFile(e.CAFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	api := &http.Server{Handler: c.Handler(), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.tlsAddr = l.Addr().String()
	go func() { _ = api.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = api.Close() })

	proxy := &http.Server{Handler: http.HandlerFunc(e.connect), ReadHeaderTimeout: 10 * time.Second}
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.ProxyURL = "http://" + pl.Addr().String()
	go func() { _ = proxy.Serve(pl) }()
	t.Cleanup(func() { _ = proxy.Close() })

	md := &http.Server{Handler: http.HandlerFunc(e.metadata), ReadHeaderTimeout: 10 * time.Second}
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.MetadataHost = ml.Addr().String()
	go func() { _ = md.Serve(ml) }()
	t.Cleanup(func() { _ = md.Close() })
	return e
}

// ProcessEnv is the environment a process needs to reach the fake as it
// reaches Google: the proxy for HTTPS (loopback stays direct), the CA to
// trust and the metadata server.
func (e *Env) ProcessEnv() []string {
	return []string{
		"HTTPS_PROXY=" + e.ProxyURL, "https_proxy=" + e.ProxyURL,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"SSL_CERT_FILE=" + e.CAFile,
		"GCE_METADATA_HOST=" + e.MetadataHost,
	}
}

// Tunnels lists the hosts that clients asked the proxy to reach.
func (e *Env) Tunnels() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.tunnels)
}

// connect serves CONNECT requests for the Google API hosts on port 443 by
// tunnelling them to the fake's TLS listener. Every other target is
// refused: nothing leaves the machine.
func (e *Env) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	e.mu.Lock()
	e.tunnels = append(e.tunnels, r.Host)
	e.mu.Unlock()
	if r.Method != http.MethodConnect || err != nil || port != "443" || !slices.Contains(Hosts, host) {
		http.Error(w, "gcefake proxy: only CONNECT to "+strings.Join(Hosts, ", ")+" on 443", http.StatusForbidden)
		return
	}
	upstream, err := net.Dial("tcp", e.tlsAddr)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "no hijacking", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		_, _ = upstream.Write(b)
	}
	go func() { _, _ = io.Copy(upstream, client); upstream.Close() }()
	go func() { _, _ = io.Copy(client, upstream); client.Close() }()
}

// metadata serves what a process on a GCE VM reads from the metadata
// server: the default service account's token, the project and the zone.
func (e *Env) metadata(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "Missing Metadata-Flavor:Google header", http.StatusForbidden)
		return
	}
	w.Header().Set("Metadata-Flavor", "Google")
	switch strings.TrimPrefix(r.URL.Path, "/computeMetadata/v1/") {
	case "instance/service-accounts/default/token":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": AccessToken, "expires_in": 3599, "token_type": "Bearer"})
	case "project/project-id":
		_, _ = io.WriteString(w, e.Compute.Project)
	case "instance/zone":
		_, _ = io.WriteString(w, "projects/0/zones/"+e.Compute.Zones[0])
	case "":
		_, _ = io.WriteString(w, "instance/\nproject/\n")
	default:
		http.NotFound(w, r)
	}
}

// certificates makes a CA and a serving certificate for hosts.
func certificates(hosts []string) (caPEM []byte, cert tls.Certificate, err error) {
	if len(hosts) == 0 {
		return nil, cert, errors.New("no hosts")
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gcefake test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, cert, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	cert = tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cert, nil
}

// Client is an HTTP client that reaches the fake as a process with
// ProcessEnv does.
func (e *Env) Client() (*http.Client, error) {
	pool := x509.NewCertPool()
	b, err := os.ReadFile(e.CAFile)
	if err != nil {
		return nil, err
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("no certificate in %s", e.CAFile)
	}
	proxy, _ := http.NewRequest(http.MethodGet, e.ProxyURL, nil)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxy.URL),
		TLSClientConfig: &tls.Config{RootCAs: pool},
	}}, nil
}
