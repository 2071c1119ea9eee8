package testcp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Controllers of kube-controller-manager that tests start (its
// --controllers names, kubernetes v1.37.2 cmd/kube-controller-manager/names).
const (
	// CSRSigningController signs approved CSRs of the kubernetes.io
	// signers with the cluster CA (csrsigning).
	CSRSigningController = "certificatesigningrequest-signing-controller"
	// CSRApprovingController approves the kubelet client CSRs RBAC allows
	// to be auto-approved (csrapproving): what kubeadm's bootstrap-token
	// bindings rely on.
	CSRApprovingController = "certificatesigningrequest-approving-controller"
	// DeploymentController makes a Deployment's ReplicaSets (deployment).
	DeploymentController = "deployment-controller"
	// ReplicaSetController makes a ReplicaSet's pods (replicaset).
	ReplicaSetController = "replicaset-controller"
)

// ControllerManager is a kube-controller-manager running against a
// ControlPlane, started by StartControllerManager and stopped by the
// cleanup it registers.
type ControllerManager struct {
	// CACert is the PEM of the CA that signs the certificates of the
	// kubernetes.io signers (--cluster-signing-cert-file): the control
	// plane's CACert, whose client certificates the API server trusts, as
	// in a kubeadm cluster (cmd/kubeadm/app/phases/controlplane/manifests.go
	// getControllerManagerCommand).
	CACert []byte
	// Log is the path of the process's output.
	Log string

	proc *process
}

// StartControllerManager starts kube-controller-manager (from the folder
// holding kube-apiserver) with only the named controllers, as the admin,
// with the control plane's CA for every kubernetes.io signer, no leader election
// and its health endpoint on a free loopback port, and waits until
// /healthz answers. A cleanup stops it. If the binary is missing (built by
// hack/testcp/build.sh since it builds kube-controller-manager), the test
// is skipped, or failed when NODEGEN_REQUIRE_TESTCP=1.
func (cp *ControlPlane) StartControllerManager(t testing.TB, controllers ...string) *ControllerManager {
	t.Helper()
	bin := filepath.Join(cp.bin, "kube-controller-manager")
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		unavailable(t, "testcp: no kube-controller-manager test binary at %s: %s", bin, buildHint)
	}
	// One folder per kube-controller-manager: a test may start another
	// after the first stopped.
	dir, err := os.MkdirTemp(cp.Dir, "kube-controller-manager-")
	if err != nil {
		t.Fatalf("testcp: %v", err)
	}
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			t.Fatalf("testcp: %v", err)
		}
		cm := &ControllerManager{CACert: cp.CACert, Log: filepath.Join(dir, "kube-controller-manager-"+strconv.Itoa(attempt)+".log")}
		cm.proc, err = startProcess(bin, cm.Log,
			"--kubeconfig="+cp.Kubeconfig,
			"--controllers="+strings.Join(controllers, ","),
			"--cluster-signing-cert-file="+cp.caCertFile,
			"--cluster-signing-key-file="+cp.caKeyFile,
			"--leader-elect=false",
			"--use-service-account-credentials=false",
			"--bind-address=127.0.0.1",
			"--secure-port="+strconv.Itoa(ports[0]),
			"--cert-dir="+filepath.Join(dir, "certs"),
			// /healthz is always allowed; nothing else is served to anyone.
			"--authentication-skip-lookup",
		)
		if err != nil {
			t.Fatalf("testcp: %v", err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("testcp: the test failed; last %d lines of %s:\n%s", logTailLines, cm.Log, cm.proc.tail(logTailLines))
			}
			if err := cm.proc.stop(stopGrace); err != nil {
				t.Errorf("testcp: %v", err)
			}
		})
		url := "https://127.0.0.1:" + strconv.Itoa(ports[0]) + "/healthz"
		err = cp.waitFor(cm.proc, "kube-controller-manager", func() (bool, string) {
			code, body, err := cp.get(url, false)
			if err != nil {
				return false, err.Error()
			}
			return code == http.StatusOK, fmt.Sprintf("/healthz: %d %s", code, body)
		})
		if err == nil {
			t.Logf("testcp: kube-controller-manager ready with %s", strings.Join(controllers, ", "))
			return cm
		}
		if !strings.Contains(err.Error(), "address already in use") || attempt == startAttempts {
			t.Fatalf("testcp: %v", err)
		}
	}
}

// writeCA writes a new self-signed ECDSA P-256 CA certificate and its key
// (both PEM) and returns the certificate's PEM.
func writeCA(certPath, keyPath string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "testcp-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, os.WriteFile(keyPath, keyPEM, 0o600)
}

// TokenUser returns an identity that authenticates with a bearer token the
// test holds (a bootstrap token, say), with its own kubeconfig. name is
// only for logs: the server decides who the token is.
func (cp *ControlPlane) TokenUser(t testing.TB, name, token string) *User {
	t.Helper()
	path, err := cp.newKubeconfig("token", credentials{token: token})
	if err != nil {
		t.Fatalf("testcp: %v", err)
	}
	return &User{Name: name, Token: token, Kubeconfig: path, cp: cp}
}
