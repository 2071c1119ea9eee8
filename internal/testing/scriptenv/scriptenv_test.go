//go:build linux

package scriptenv_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/testing/scriptenv"
)

// TestProductionInputs runs curl in the namespace as a shipped script
// would: the production names and addresses on their real ports reach
// the test's servers, with TLS verified against the system CA bundle, a
// forwarded server of the test's own network answers at its address, a
// bound file is at its production path, and nothing else is reachable. The machine's
// own /etc/hosts and CA bundle are left as they were.
func TestProductionInputs(t *testing.T) {
	e := scriptenv.New(t)
	e.Serve("metadata.google.internal", 80, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "no Metadata-Flavor", http.StatusForbidden)
			return
		}
		fmt.Fprint(w, "metadata "+r.URL.Path)
	}))
	e.Serve("169.254.169.254", 80, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "by number "+r.URL.Path)
	}))
	e.ServeTLS("secretmanager.googleapis.com", 443, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secret manager "+r.URL.Path)
	}))
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "outside") }))
	defer outside.Close()
	e.Forward(outside.Listener.Addr().String())
	hidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hidden") }))
	defer hidden.Close()

	dir := t.TempDir()
	conf := filepath.Join(dir, "conf")
	if err := os.WriteFile(conf, []byte("bound\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Bind(conf, target)

	hostsBefore, _ := os.ReadFile("/etc/hosts")
	bundleBefore, _ := os.ReadFile(scriptenv.CABundle)

	script := `set -u
curl -sS --max-time 5 -H 'Metadata-Flavor: Google' http://metadata.google.internal/computeMetadata/v1/instance/name; echo
curl -sS --max-time 5 http://169.254.169.254/computeMetadata/v1/project/project-id; echo
curl -sS --max-time 5 https://secretmanager.googleapis.com/v1/projects/p; echo
curl -sS --max-time 5 ` + outside.URL + `; echo
cat "$1"
if curl -sS --max-time 2 ` + hidden.URL + ` 2>/dev/null; then echo "reached the hidden server"; fi
if curl -sS --max-time 2 --resolve secretmanager.googleapis.com:443:127.0.0.1 https://secretmanager.googleapis.com/ --cacert /dev/null 2>/dev/null; then echo "TLS without the CA"; fi
`
	cmd := e.Command("bash", "-c", script, "bash", target)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	want := "metadata /computeMetadata/v1/instance/name\nby number /computeMetadata/v1/project/project-id\nsecret manager /v1/projects/p\noutside\nbound\n"
	if stdout.String() != want {
		t.Errorf("the script printed\n%s\nwant\n%s\nstderr:\n%s", stdout.String(), want, stderr.String())
	}

	if b, _ := os.ReadFile(target); string(b) != "original\n" {
		t.Errorf("the bind mount is visible outside the namespace: %q", b)
	}
	if b, _ := os.ReadFile("/etc/hosts"); !bytes.Equal(b, hostsBefore) {
		t.Error("/etc/hosts changed outside the namespace")
	}
	if b, _ := os.ReadFile(scriptenv.CABundle); !bytes.Equal(b, bundleBefore) {
		t.Error("the CA bundle changed outside the namespace")
	}
	// The namespace's servers are not in the test's own network.
	if c, err := net.Dial("tcp", "127.0.0.1:443"); err == nil {
		c.Close()
		if out, err := exec.Command("curl", "-sk", "--max-time", "2", "https://127.0.0.1/").Output(); err == nil && strings.Contains(string(out), "secret manager") {
			t.Error("the namespace's server answers in the test's network")
		}
	}
}
