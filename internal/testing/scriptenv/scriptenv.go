//go:build linux

package scriptenv

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// CABundle is where curl and OpenSSL on Debian and Ubuntu read the trusted
// CAs from (the ca-certificates package's bundle, libcurl's compiled-in
// CURL_CA_BUNDLE).
const CABundle = "/etc/ssl/certs/ca-certificates.crt"

// An Env is a network and mount namespace a script runs in. The zero
// value is not usable: call New.
type Env struct {
	t     testing.TB
	dir   string
	netns string // /proc/<holder>/ns/net

	mu    sync.Mutex
	hosts []string    // names that resolve to 127.0.0.1
	binds [][2]string // source, target
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// Require skips the test unless this machine can build the namespaces;
// under NODEGEN_REQUIRE_NETNS=1 (CI) it fails instead.
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range []string{"unshare", "nsenter", "ip", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("running a script in namespaces needs %s (apt-get install util-linux iproute2)", strings.Join(missing, ", "))
	if os.Getenv("NODEGEN_REQUIRE_NETNS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// New makes a network namespace with loopback up, kept until the test
// ends. It skips the test as Require does.
func New(t testing.TB) *Env {
	t.Helper()
	Require(t)
	holder := exec.Command("unshare", "--net", "--", "sh", "-c", "ip link set lo up && echo ready && exec sleep infinity")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("the namespace's holder said %q: %v", line, err)
	}
	return &Env{t: t, dir: t.TempDir(), netns: "/proc/" + strconv.Itoa(holder.Process.Pid) + "/ns/net"}
}

// Host makes names resolve to 127.0.0.1 in the script's /etc/hosts.
func (e *Env) Host(names ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hosts = append(e.hosts, names...)
}

// Bind bind-mounts source over target (a file or directory that exists on
// this machine) in the script's mount namespace.
func (e *Env) Bind(source, target string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.binds = append(e.binds, [2]string{source, target})
}

// Listen listens on addr (host:port, a numeric host) in the namespace.
// The socket stays in the namespace; the test's goroutines use it as any
// other.
func (e *Env) Listen(addr string) net.Listener {
	e.t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result)
	// A goroutine of its own, locked to its thread: if the thread cannot
	// return to the test's namespace it ends with the goroutine rather
	// than run other goroutines in the wrong one.
	go func() {
		runtime.LockOSThread()
		ln, err := e.listen(addr)
		if err == nil || !errors.Is(err, errNoReturn) {
			runtime.UnlockOSThread()
		}
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		e.t.Fatalf("listening on %s in the namespace: %v", addr, r.err)
	}
	e.t.Cleanup(func() { r.ln.Close() })
	return r.ln
}

var errNoReturn = errors.New("could not return to the test's network namespace")

func (e *Env) listen(addr string) (net.Listener, error) {
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(orig)
	target, err := unix.Open(e.netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return nil, err
	}
	ln, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, fmt.Errorf("%w: %v", errNoReturn, err)
	}
	return ln, lerr
}

// Address adds ip (an IPv4 or IPv6 address) to the namespace's loopback,
// for a server at an address the script dials by number (169.254.169.254).
func (e *Env) Address(ip string) {
	e.t.Helper()
	bits := "/32"
	if strings.Contains(ip, ":") {
		bits = "/128"
	}
	if out, err := exec.Command("nsenter", "--net="+e.netns, "--", "ip", "addr", "add", ip+bits, "dev", "lo").CombinedOutput(); err != nil {
		e.t.Fatalf("ip addr add %s: %v\n%s", ip, err, out)
	}
}

// Serve serves h over HTTP at host:port: a host name resolves to
// 127.0.0.1 in the namespace; an IP address (169.254.169.254, the
// metadata server a script dials by number) is added to its loopback.
func (e *Env) Serve(host string, port int, h http.Handler) {
	e.t.Helper()
	ip := "127.0.0.1"
	if addr := net.ParseIP(host); addr != nil {
		ip = host
		if !addr.IsLoopback() {
			e.Address(host)
		}
	} else {
		e.Host(host)
	}
	e.serve(e.Listen(net.JoinHostPort(ip, strconv.Itoa(port))), h)
}

// ServeTLS serves h over HTTPS at host:port with a certificate for host
// from the namespace's CA, which the script's CA bundle trusts alone.
func (e *Env) ServeTLS(host string, port int, h http.Handler) {
	e.t.Helper()
	cert, err := e.certificate(host)
	if err != nil {
		e.t.Fatal(err)
	}
	e.Host(host)
	ln := e.Listen(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	e.serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), h)
}

func (e *Env) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	e.t.Cleanup(func() { srv.Close() })
}

// Forward makes the TCP address addr of the test's own network (a server
// the test started, such as a kube-apiserver on 127.0.0.1) reachable at
// the same address in the namespace: each connection is relayed.
func (e *Env) Forward(addr string) {
	ln := e.Listen(addr)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relay(c, addr)
		}
	}()
}

func relay(c net.Conn, addr string) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// CAPEM is the namespace's CA certificate in PEM.
func (e *Env) CAPEM() []byte {
	e.t.Helper()
	if err := e.ensureCA(); err != nil {
		e.t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.ca.Raw})
}

func (e *Env) ensureCA() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ca != nil {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "scriptenv test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	if e.ca, err = x509.ParseCertificate(der); err != nil {
		return err
	}
	e.caKey = key
	return nil
}

func (e *Env) certificate(host string) (tls.Certificate, error) {
	if err := e.ensureCA(); err != nil {
		return tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, e.ca, &key.PublicKey, e.caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// Command returns a command that runs name with args in the namespace:
// /etc/hosts maps the names of Host, Serve and ServeTLS (and localhost)
// to loopback, the CA bundle holds the namespace's CA alone when a TLS
// server was started, and the Bind mounts are in place. Its environment
// is the caller's to set (cmd.Env), as the production one would be.
func (e *Env) Command(name string, args ...string) *exec.Cmd {
	e.t.Helper()
	e.mu.Lock()
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost\n"
	if len(e.hosts) > 0 {
		names := slices.Clone(e.hosts)
		slices.Sort(names)
		hosts += "127.0.0.1\t" + strings.Join(slices.Compact(names), " ") + "\n"
	}
	binds := slices.Clone(e.binds)
	tlsUsed := e.ca != nil
	e.mu.Unlock()
	dir, err := os.MkdirTemp(e.dir, "cmd")
	if err != nil {
		e.t.Fatal(err)
	}
	write := func(base string, b []byte) string {
		p := filepath.Join(dir, base)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			e.t.Fatal(err)
		}
		return p
	}
	binds = append([][2]string{{write("hosts", []byte(hosts)), "/etc/hosts"}}, binds...)
	if tlsUsed {
		binds = append(binds, [2]string{write("ca-certificates.crt", e.CAPEM()), CABundle})
	}
	// The mounts are made by a shell inside the new mount namespace
	// (unshare makes its propagation private), then the script replaces it.
	var mounts strings.Builder
	for _, b := range binds {
		fmt.Fprintf(&mounts, "mount --bind %s %s || exit 125\n", shellQuote(b[0]), shellQuote(b[1]))
	}
	mounts.WriteString(`exec "$@"`)
	full := append([]string{"--net=" + e.netns, "--", "unshare", "--mount", "--", "/bin/sh", "-c", mounts.String(), "scriptenv", name}, args...)
	return exec.Command("nsenter", full...)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
