package k8stest

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// testSmuggling: the approver's ServiceAccount (a leaked token of it)
// approves requests whose PEM the policy and the signer could read
// differently, while kube-controller-manager's signer runs. encoding/pem's
// Decode, which the API server's validation and the signer call, takes
// the last BEGIN line before the first END line that closes a block, and
// ignores what follows it; each request below is checked with it first,
// so that the test knows what the signer signs. Every form that is not
// the one pem.EncodeToMemory writes is refused by the policy, and nothing
// is issued for it; the request of that one form is approved and issued
// for the name the policy read.
func (e *approverEnv) testSmuggling(t *testing.T, joiner *testcp.User) {
	cm := e.cp.StartControllerManager(t, testcp.CSRSigningController)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cm.CACert)
	policy := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ", model.NodeCSRApprover.Name(), model.NodeCSRApprover.Name())
	msg := func(name string) string {
		return "instance projects/" + e.src.Cluster.GCP.Project + "/zones/us-central1-a/instances/" + name + " is RUNNING, created 5s ago by MIG renew-work-us-central1-a"
	}
	// decoy is a CSR for name without its END line.
	decoy := func(name string) string {
		p := string(csrRequest(t, name))
		return p[:strings.LastIndex(p, "-----END ")]
	}
	cat := func(parts ...string) []byte { return []byte(strings.Join(parts, "")) }
	canonical := func(name string) string { return string(csrRequest(t, name)) }
	crlf := strings.ReplaceAll(canonical("renew-work-sm07"), "\n", "\r\n")
	cases := []struct {
		name    string
		request []byte
		names   string // the instance the approval names (what a naive reading finds first)
		signed  string // the node name the signer reads
		issued  bool
	}{
		{"DecoyWithoutEndThenControlPlane", cat(decoy("renew-work-sm01"), canonical("cp-1")), "renew-work-sm01", "cp-1", false},
		{"DecoyWithoutEndThenOnPrem", cat(decoy("renew-work-sm02"), canonical("onprem-gpu-01")), "renew-work-sm02", "onprem-gpu-01", false},
		{"DecoyWithShortEndThenControlPlane", cat(decoy("renew-work-sm03"), "-----END CERTIFICATE REQUEST----\n", canonical("cp-1")), "renew-work-sm03", "cp-1", false},
		{"Header", []byte(strings.Replace(canonical("renew-work-sm04"), "-----\n", "-----\nX-Note: renew-work-sm04\n", 1)), "renew-work-sm04", "renew-work-sm04", false},
		{"TrailingBlock", cat(canonical("renew-work-sm05"), canonical("cp-1")), "renew-work-sm05", "renew-work-sm05", false},
		{"TrailingText", cat(canonical("renew-work-sm06"), "more\n"), "renew-work-sm06", "renew-work-sm06", false},
		{"CRLF", []byte(crlf), "renew-work-sm07", "renew-work-sm07", false},
		{"TheOneForm", cat(canonical("renew-work-sm08")), "renew-work-sm08", "renew-work-sm08", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			block, _ := pem.Decode(c.request)
			if block == nil || block.Type != "CERTIFICATE REQUEST" {
				t.Fatalf("encoding/pem finds no CERTIFICATE REQUEST in %q", c.request)
			}
			cr, err := x509.ParseCertificateRequest(block.Bytes)
			if err != nil || cr.Subject.CommonName != "system:node:"+c.signed {
				t.Fatalf("encoding/pem and crypto/x509 read %v (%v) from %q, want system:node:%s", cr.Subject, err, c.request, c.signed)
			}
			csr := createCSR(t, joiner, c.request, model.KubeletClientSigner)
			stderr, err := decide(t, e.sa, csr, "Approved", model.CSRReasonApproved, msg(c.names))
			if !c.issued {
				if err == nil {
					issued := ""
					eventually(t, 20*time.Second, "the smuggled CSR signed", func() string {
						if cert := e.csr(t, csr).Status.Certificate; len(cert) > 0 {
							if b, _ := pem.Decode(cert); b != nil {
								if x, err := x509.ParseCertificate(b.Bytes); err == nil {
									issued = x.Subject.CommonName
								}
							}
							return ""
						}
						return "no certificate"
					})
					t.Fatalf("the approval naming %s was allowed, and kube-controller-manager issued a certificate for %s", c.names, issued)
				}
				want := "CSR " + csr + "'s request is not one PEM CERTIFICATE REQUEST block"
				if !strings.Contains(stderr, policy) || !strings.Contains(stderr, want) {
					t.Fatalf("denied with %q; want the policy's %q", strings.TrimSpace(stderr), want)
				}
				time.Sleep(2 * time.Second)
				if got := e.csr(t, csr); decision(got) != nil || len(got.Status.Certificate) > 0 {
					t.Fatalf("after the refused approval: conditions %+v, %d certificate bytes", got.Status.Conditions, len(got.Status.Certificate))
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			var cert []byte
			eventually(t, 20*time.Second, "the CSR signed", func() string {
				if cert = e.csr(t, csr).Status.Certificate; len(cert) == 0 {
					return "no certificate"
				}
				return ""
			})
			b, _ := pem.Decode(cert)
			if b == nil {
				t.Fatalf("the certificate is not PEM: %q", cert)
			}
			x, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := x.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("the certificate does not chain to the cluster CA: %v", err)
			}
			if x.Subject.CommonName != "system:node:"+c.signed {
				t.Errorf("issued for %s, want system:node:%s", x.Subject.CommonName, c.signed)
			}
		})
	}
}
