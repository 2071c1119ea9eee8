package gce_test

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/util/keyutil"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// spkiHash is the hash the approver compares: SHA-256 of the
// SubjectPublicKeyInfo DER of the key in a PEM private key, read as the
// kubelet's TLS bootstrap reads it (client-go's keyutil).
func spkiHash(t *testing.T, keyPEM []byte) string {
	t.Helper()
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		t.Fatalf("the kubelet would not load the key: %v\n%s", err, keyPEM)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.(crypto.Signer).Public())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:])
}

// TestStartupScriptPublishesKubeletKey: before each kubeadm join, the
// script leaves the key the kubelet's TLS bootstrap loads (client-go's
// keyutil.LoadOrGenerateKeyFile finds it and generates none) and has
// published its hash with this instance's id as the guest attribute the
// approver reads; a join retried after kubeadm reset makes a new key and
// publishes that one.
func TestStartupScriptPublishesKubeletKey(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["cpu-burst"]
	vm := gpuVM(src, g)
	vm.InstanceID = "7310348279129456001"
	res := scripttest.Run(t, files[layout.StartupScriptPath(g.Name)], vm, scripttest.Options{FailJoins: 1})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", res.ExitCode, res.Stderr)
	}
	if len(res.JoinKeys) != 2 {
		t.Fatalf("%d joins, want 2 (one failed)\n%s", len(res.JoinKeys), res.Stderr)
	}
	for i, k := range res.JoinKeys {
		if len(k) == 0 {
			t.Fatalf("join %d: no kubelet-client.key.tmp when kubeadm join ran", i+1)
		}
	}
	if bytes.Equal(res.JoinKeys[0], res.JoinKeys[1]) {
		t.Error("the join after kubeadm reset reused the first attempt's key")
	}
	got := res.GuestAttributes[model.KubeletKeyAttribute]
	want := vm.InstanceID + " sha256:" + spkiHash(t, res.JoinKeys[1])
	if got != want {
		t.Errorf("guest attribute %s = %q, want %q (all: %v)", model.KubeletKeyAttribute, got, want, res.GuestAttributes)
	}
	path := filepath.Join(res.KubeletDir, "pki", "kubelet-client.key.tmp")
	data, generated, err := keyutil.LoadOrGenerateKeyFile(path)
	if err != nil || generated || !bytes.Equal(data, res.JoinKeys[1]) {
		t.Errorf("the kubelet's LoadOrGenerateKeyFile(%s): generated %v, err %v, same key %v", path, generated, err, bytes.Equal(data, res.JoinKeys[1]))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the key file: %v, mode %v; want no access for group and others", err, fi.Mode())
	}
	if n := strings.Count(strings.Join(res.Requests, "\n"), "/instance/guest-attributes/"+model.KubeletKeyAttribute); n != 2 {
		t.Errorf("%d writes of the guest attribute, want one per join attempt (2)", n)
	}

	// The metadata server refusing the write (guest attributes not
	// enabled) stops the join before kubeadm runs: no CSR would be approved.
	refused := scripttest.Run(t, files[layout.StartupScriptPath(g.Name)], vm, scripttest.Options{
		Faults: []scripttest.Fault{{Path: "/guest-attributes/", Count: 100, Status: 403}}})
	if refused.ExitCode == 0 || len(refused.KubeadmCalls) != 0 || !strings.Contains(refused.Stderr, "enable-guest-attributes=TRUE") {
		t.Errorf("with the write refused: exit %d, kubeadm calls %v\n%s", refused.ExitCode, refused.KubeadmCalls, refused.Stderr)
	}
}
