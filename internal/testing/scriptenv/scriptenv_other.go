//go:build !linux

package scriptenv

import (
	"net"
	"net/http"
	"os/exec"
	"testing"
)

// CABundle is where curl and OpenSSL on Debian and Ubuntu read the trusted
// CAs from.
const CABundle = "/etc/ssl/certs/ca-certificates.crt"

// An Env is a network and mount namespace a script runs in: Linux only.
type Env struct{}

// Require skips the test: namespaces are Linux's.
func Require(t testing.TB) {
	t.Helper()
	t.Skip("running a script in namespaces needs Linux")
}

// New skips the test: namespaces are Linux's.
func New(t testing.TB) *Env {
	t.Helper()
	Require(t)
	return nil
}

func (e *Env) Host(names ...string)                           {}
func (e *Env) Bind(source, target string)                     {}
func (e *Env) Listen(addr string) net.Listener                { return nil }
func (e *Env) Address(ip string)                              {}
func (e *Env) Serve(host string, port int, h http.Handler)    {}
func (e *Env) ServeTLS(host string, port int, h http.Handler) {}
func (e *Env) Forward(addr string)                            {}
func (e *Env) CAPEM() []byte                                  { return nil }
func (e *Env) Command(name string, args ...string) *exec.Cmd  { return nil }
