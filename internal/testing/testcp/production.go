package testcp

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"testing"
	"time"
)

// Groups and users of kubeadm's bindings (kubernetes/kubernetes v1.37.2,
// cmd/kubeadm/app/constants/constants.go).
const (
	// KubeadmNodeBootstrapGroup is the group of the tokens kubeadm token
	// create makes by default (NodeBootstrapTokenAuthGroup): kubeadm's
	// bindings let them post CSRs and get their kubelet client CSRs
	// auto-approved.
	KubeadmNodeBootstrapGroup = "system:bootstrappers:kubeadm:default-node-token"
	// NodesGroup is the group of every kubelet's client certificate.
	NodesGroup = "system:nodes"
	// NodeUserPrefix starts the user name of a kubelet: system:node:<name>.
	NodeUserPrefix = "system:node:"
)

// KubeadmBindings returns the RBAC objects kubeadm init's bootstrap-token
// phase creates (kubernetes/kubernetes v1.37.2,
// cmd/kubeadm/app/cmd/phases/init/bootstraptoken.go, which calls, in
// cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go,
// AllowBootstrapTokensToGetNodes, AllowBootstrapTokensToPostCSRs,
// AutoApproveNodeBootstrapTokens, AutoApproveNodeCertificateRotation and
// AllowAPIServerToAccessKubeletAPI), in that order, as JSON-ready maps:
//   - ClusterRole and ClusterRoleBinding kubeadm:get-nodes: get nodes,
//     for KubeadmNodeBootstrapGroup;
//   - kubeadm:kubelet-bootstrap: system:node-bootstrapper (create and
//     watch CSRs) for KubeadmNodeBootstrapGroup;
//   - kubeadm:node-autoapprove-bootstrap:
//     system:certificates.k8s.io:certificatesigningrequests:nodeclient for
//     KubeadmNodeBootstrapGroup, which the csrapproving controller reads
//     to approve their kubelet client CSRs;
//   - kubeadm:node-autoapprove-certificate-rotation:
//     system:certificates.k8s.io:certificatesigningrequests:selfnodeclient
//     for system:nodes (a kubelet renewing its own certificate);
//   - kubeadm:apiserver-kubelet-client: system:kubelet-api-admin for the
//     user kube-apiserver-kubelet-client.
//
// The ClusterRoles the bindings name, other than kubeadm:get-nodes, are
// the API server's own bootstrap policy.
func KubeadmBindings() []map[string]any {
	rbac := "rbac.authorization.k8s.io/v1"
	binding := func(name, role, kind, subject string) map[string]any {
		return map[string]any{"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": name},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
			"subjects": []map[string]any{{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject}}}
	}
	return []map[string]any{
		{"apiVersion": rbac, "kind": "ClusterRole", "metadata": map[string]any{"name": "kubeadm:get-nodes"},
			"rules": []map[string]any{{"apiGroups": []string{""}, "resources": []string{"nodes"}, "verbs": []string{"get"}}}},
		binding("kubeadm:get-nodes", "kubeadm:get-nodes", "Group", KubeadmNodeBootstrapGroup),
		binding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", "Group", KubeadmNodeBootstrapGroup),
		binding("kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", "Group", KubeadmNodeBootstrapGroup),
		binding("kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "Group", NodesGroup),
		binding("kubeadm:apiserver-kubelet-client", "system:kubelet-api-admin", "User", "kube-apiserver-kubelet-client"),
	}
}

// create creates the cluster-scoped object o as the admin, through the
// REST API (kubectl may be missing: Start does not need it).
func (cp *ControlPlane) create(o map[string]any) error {
	kind, _ := o["kind"].(string)
	var resource string
	switch kind {
	case "ClusterRole":
		resource = "clusterroles"
	case "ClusterRoleBinding":
		resource = "clusterrolebindings"
	default:
		return fmt.Errorf("create: no resource for kind %s", kind)
	}
	body, err := json.Marshal(o)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, cp.URL+"/apis/rbac.authorization.k8s.io/v1/"+resource, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cp.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := cp.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("creating %s %v: %s: %s", kind, o["metadata"], resp.Status, bytes.TrimSpace(b))
	}
	return nil
}

// Node returns the identity of node name's kubelet once it has its client
// certificate: user system:node:<name> in group system:nodes (the subject
// the kube-apiserver-client-kubelet signer issues), an ECDSA P-256 key and
// a certificate for client auth signed by the control plane's CA, valid
// for a day, in its own kubeconfig. With Options.Production the Node
// authorizer and NodeRestriction hold it to what a kubelet may do: its
// own Node (without labels under node-restriction.kubernetes.io/ and the
// kubernetes.io and k8s.io keys kubelets may not set), the Pods bound to
// it and what they reference. Without it, RBAC alone grants it nothing
// (the system:node ClusterRole is bound to nobody by default). User.Token
// is empty. Any error fails the test.
func (cp *ControlPlane) Node(t testing.TB, name string) *User {
	t.Helper()
	cert, key, err := cp.clientCert(NodeUserPrefix+name, []string{NodesGroup})
	if err != nil {
		t.Fatalf("testcp: a client certificate for node %s: %v", name, err)
	}
	path, err := cp.newKubeconfig("node-"+name, credentials{cert: cert, key: key})
	if err != nil {
		t.Fatalf("testcp: %v", err)
	}
	return &User{Name: NodeUserPrefix + name, Kubeconfig: path, cp: cp}
}

// clientCert returns a new client certificate for cn in the organizations
// orgs, signed by the control plane's CA, and its key, both PEM.
func (cp *ControlPlane) clientCert(cn string, orgs []string) (certPEM, keyPEM []byte, err error) {
	ca, caKey, err := cp.loadCA()
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// loadCA reads the CA certificate and key Start wrote.
func (cp *ControlPlane) loadCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certBlock, _ := pem.Decode(cp.CACert)
	if certBlock == nil {
		return nil, nil, errors.New("the CA certificate is not PEM")
	}
	ca, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(cp.caKeyFile)
	if err != nil {
		return nil, nil, err
	}
	keyBlock, _ := pem.Decode(b)
	if keyBlock == nil {
		return nil, nil, errors.New("the CA key is not PEM")
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	return ca, key, err
}
