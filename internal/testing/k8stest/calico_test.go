package k8stest

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// calicoCRDs are tigera-operator v1.43.0's CRDs (Calico v3.32.0),
// verbatim but gzipped: the operator's Installation
// (tigera/operator pkg/imports/crds/operator/operator.tigera.io_installations.yaml)
// and Calico's FelixConfiguration and IPPool
// (pkg/imports/crds/calico/v1.crd.projectcalico.org/), Apache-2.0 (LICENSE
// beside them).
//
//go:embed testdata/calico/*.yaml.gz
var calicoCRDs embed.FS

// calicoFiles are the out/ files of Calico's custom resources, which the
// server checks against calicoCRDs (committedYAML leaves them to
// testCalico).
var calicoFiles = []string{layout.CalicoOperatorPath, layout.CalicoManifestPath}

// installCalicoCRDs creates the CRDs and waits until each is Established.
func (e *env) installCalicoCRDs(t *testing.T) { installCalicoCRDs(t, e.cp.Admin()) }

// installCalicoCRDs creates the CRDs as admin and waits until each is
// Established.
func installCalicoCRDs(t *testing.T, admin *testcp.User) {
	t.Helper()
	run := func(stdin string, args ...string) {
		t.Helper()
		if _, stderr, err := kubectl(t, admin, stdin, args...); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
	}
	entries, err := calicoCRDs.ReadDir("testdata/calico")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range entries {
		f, err := calicoCRDs.Open("testdata/calico/" + de.Name())
		if err != nil {
			t.Fatal(err)
		}
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(z)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		// The Installation CRD is over the 256 KiB of client-side apply's
		// annotation: create it server-side.
		run(string(b), "apply", "--server-side", "--field-manager=k8stest", "-f", "-")
		group, plural, _ := strings.Cut(strings.TrimSuffix(de.Name(), ".yaml.gz"), "_")
		names = append(names, "customresourcedefinition/"+plural+"."+group)
	}
	// (kubectl wait fails at once on a CRD whose status has no conditions
	// yet, so each is polled.)
	for _, n := range names {
		eventually(t, 60*time.Second, n+" Established", func() string {
			out, _, err := kubectl(t, admin, "", "get", n, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
			if err != nil || out != "True" {
				return fmt.Sprintf("%q %v", out, err)
			}
			return ""
		})
	}
}

// testCalico: the committed out/calico/ files pass the real API server's
// strict server-side dry run against Calico's CRDs (every field known, of
// its type, within its enum), and the same objects broken do not.
func (e *env) testCalico(t *testing.T) {
	e.installCalicoCRDs(t)
	for _, path := range calicoFiles {
		b, err := os.ReadFile(filepath.Join(e.root, "out", filepath.FromSlash(path)))
		if err != nil {
			t.Fatalf("the shipped example renders %s: %v", path, err)
		}
		e.admin(t, string(b), "create", "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-")
	}

	// Broken: an unknown field, a value outside an enum, a wrong type.
	for _, tc := range []struct {
		path, from, to, want string
	}{
		{layout.CalicoOperatorPath, "    mtu: ", "    mtuBytes: ", `unknown field "spec.calicoNetwork.mtuBytes"`},
		{layout.CalicoOperatorPath, "encapsulation: VXLAN", "encapsulation: VXLANAlways", "spec.calicoNetwork.ipPools[0].encapsulation"},
		{layout.CalicoManifestPath, "vxlanMode: Always", "vxlanMode: always", "spec.vxlanMode"},
		{layout.CalicoManifestPath, "natOutgoing: true", "natOutgoing: Enabled", "spec.natOutgoing"},
		{layout.CalicoManifestPath, "vxlanMTU: ", "vxlanMtu: ", `unknown field "spec.vxlanMtu"`},
	} {
		b, err := os.ReadFile(filepath.Join(e.root, "out", filepath.FromSlash(tc.path)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(tc.from)) {
			t.Fatalf("%s has no %q to break", tc.path, tc.from)
		}
		broken := strings.Replace(string(b), tc.from, tc.to, 1)
		_, stderr, err := kubectl(t, e.cp.Admin(), broken, "create", "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-")
		if err == nil || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s with %q: the server said %v\n%s\nwant a rejection naming %s", tc.path, tc.to, err, stderr, tc.want)
		}
	}
}
