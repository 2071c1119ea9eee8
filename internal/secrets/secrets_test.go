package secrets

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
)

// Each class of the table: a text holding one, the class found, and the
// secret part it covers.
func TestFind(t *testing.T) {
	saJSON := `{"type": "service_account", "project_id": "p", "private_key_id": "3f2a9c1e0b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39"}`
	for _, c := range []struct {
		name, text, class, secret string
	}{
		{"token", "kubeadm join --token abcdef.0123456789abcdef 10.0.0.1:6443", "kubeadm bootstrap token", "abcdef.0123456789abcdef"},
		{"token at start", "abcdef.0123456789abcdef", "kubeadm bootstrap token", "abcdef.0123456789abcdef"},
		{"pem", "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n", "private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"},
		{"pem without end", "-----BEGIN PRIVATE KEY-----", "private key", "-----BEGIN PRIVATE KEY-----"},
		{"sa key id json", `"private_key_id": "3f2a9c1e0b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39"`, "service-account key id", "3f2a9c1e0b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39"},
		{"sa key id yaml", "private_key_id: 3f2a9c1e0b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39", "service-account key id", "3f2a9c1e0b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39"},
		{"sa type", `{"type": "service_account"}`, "service-account key file", `"type": "service_account"`},
		{"api key", "key=AIzaSyD3x4mpl3K3yF0rT3st1ngOnly-abcdefg;", "Google API key", "AIzaSyD3x4mpl3K3yF0rT3st1ngOnly-abcdefg"},
		{"access token", "Authorization: Bearer ya29.a0AfB_byC3xampleAccessTokenValue0123", "OAuth access token", "ya29.a0AfB_byC3xampleAccessTokenValue0123"},
		{"refresh token", `"refresh_token": "1//0gExampleRefreshTokenValue-0123456789abcdef"`, "OAuth refresh token", "1//0gExampleRefreshTokenValue-0123456789abcdef"},
		{"url password", "https://deploy:hunter2@registry.example.com/v2/", "password in a URL", "hunter2"},
		{"image user:token", "robot:gh0stT0ken@registry.example.com/tools/k8s:1.34", "password before a host name", "gh0stT0ken"},
		{"image user:token with port", `image: "robot:gh0stT0ken@registry.example.com:5000/k8s"`, "password before a host name", "gh0stT0ken"},
	} {
		t.Run(c.name, func(t *testing.T) {
			found := Find(c.text)
			if len(found) == 0 {
				t.Fatalf("nothing found in %q", c.text)
			}
			s := found[0]
			if s.Class != c.class || s.value != c.secret || c.text[s.Start:s.End] != c.secret || s.Encoded {
				t.Errorf("found %s %q at %d:%d, want %s %q", s.Class, s.value, s.Start, s.End, c.class, c.secret)
			}
			msg := s.Describe("in the source")
			if strings.Contains(msg, c.secret) || (len(c.secret) > 8 && strings.Contains(msg, c.secret[4:])) {
				t.Errorf("message shows the secret: %s", msg)
			}
		})
	}
	t.Run("service-account json", func(t *testing.T) {
		found := Find(saJSON)
		if len(found) != 2 || found[0].Class != "service-account key file" || found[1].Class != "service-account key id" {
			t.Errorf("found %+v", found)
		}
	})
}

// Base64 of a secret is decoded and found, reported at the encoded run.
func TestFindBase64(t *testing.T) {
	for _, secret := range []string{
		"abcdef.0123456789abcdef",
		`{"type": "service_account", "private_key_id": "3f2a9c1e0b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39"}`,
		"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n",
		"https://u:p4ssw0rd-long-enough@registry.example.com/",
	} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
			b64 := enc.EncodeToString([]byte(secret))
			text := "data: " + b64 + "\n"
			found := Find(text)
			if len(found) != 1 || !found[0].Encoded || text[found[0].Start:found[0].End] != b64 {
				t.Errorf("base64 of %q: found %+v", secret, found)
				continue
			}
			if red := Redact(text); strings.Contains(red, b64[:12]) || !strings.HasPrefix(red, "data: ") {
				t.Errorf("Redact: %q", red)
			}
		}
	}
}

// Things every nodegen source and artifact is full of are not secrets.
func TestNoFalsePositives(t *testing.T) {
	for _, text := range []string{
		"sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d",
		"--discovery-token-ca-cert-hash sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d",
		"docker.io/alpine/k8s:1.34.5@sha256:0f2a6b1c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a",
		"alpine:3.19@sha256:0f2a6b1c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a",
		"registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0",
		"NODE_LABELS: cloud.google.com/gke-accelerator=nvidia-tesla-t4,example.com/pool=gpu-burst,nodegen.dev/node-group=gpu-t4",
		"NODE_TAINTS: nvidia.com/gpu=present:NoSchedule,startup-taint.cluster-autoscaler.kubernetes.io/gpu-not-ready=true:NoSchedule",
		"https://www.googleapis.com/compute/v1/projects/acme-hybrid-ai/zones/us-central1-a/instanceGroups/hybrid-ai-gpu-t4-us-central1-a",
		"http://metadata.google.internal/computeMetadata/v1/instance/attributes/kube-env",
		"https://${KUBERNETES_SERVICE_HOST}:${KUBERNETES_SERVICE_PORT}/api/v1/nodes",
		"git@github.com:nodegen/nodegen.git",
		"ssh://git@github.com/nodegen/nodegen",
		"controlPlaneEndpoint: 10.20.0.10:6443",
		"projects/acme-hybrid-ai/secrets/kubeadm-join-token/versions/latest",
		"bootstrap-token-abcdef",
		"3f2a9c1e0b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39", // a hex id without its field name
		base64.StdEncoding.EncodeToString([]byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}),
		"nvidia.com/gpu.present=true",
		`member  = "user:mallory@example.com"`,
		`members = ["serviceAccount:k8s-nodes@acme-hybrid-ai.iam.gserviceaccount.com", "group:ops@example.com"]`,
		"mailto:ops@example.com",
		"kubeadm join 10.20.0.10:6443 --token \"${token}\" --discovery-token-ca-cert-hash sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d",
	} {
		if found := Find(text); len(found) > 0 {
			t.Errorf("%q: found %s %q", text, found[0].Class, found[0].value)
		}
	}
}

func TestFingerprint(t *testing.T) {
	fp := Fingerprint("abcdef.0123456789abcdef")
	if fp != "abcd… sha256:a4b8b245" {
		t.Errorf("fingerprint %q", fp)
	}
	if got := Fingerprint("hunter2"); strings.Contains(got, "hun") || !strings.HasPrefix(got, "h… sha256:") {
		t.Errorf("short secret shows too much: %q", got)
	}
	if Fingerprint("a") != "… sha256:ca978112" {
		t.Errorf("one-character secret: %q", Fingerprint("a"))
	}
}

// Redact leaves text without secrets alone and replaces each secret, so
// that messages quoting a value (CUE's own errors) never show it.
func TestRedact(t *testing.T) {
	plain := `nodeGroups."gpu-t4".labels."example.com/pool": invalid value "gpu burst"`
	if Redact(plain) != plain {
		t.Errorf("Redact changed %q", plain)
	}
	msg := `nodeGroups."abcdef.0123456789abcdef".name: invalid value "abcdef.0123456789abcdef" (out of bound =~"^[a-z]")`
	want := `nodeGroups."abcd… sha256:a4b8b245".name: invalid value "abcd… sha256:a4b8b245" (out of bound =~"^[a-z]")`
	if got := Redact(msg); got != want {
		t.Errorf("Redact:\n got %s\nwant %s", got, want)
	}
}

// The last gate: a secret in a rendered file is reported with the file
// and line, never shown.
func TestArtifacts(t *testing.T) {
	files := layout.Files{
		"gce/a/kube-env":          []byte("# Code generated by nodegen from x. DO NOT EDIT.\nNODE_LABELS: a=b\n"),
		"gce/a/startup-script.sh": []byte("#!/bin/bash\n# header\nkubeadm join --token abcdef.0123456789abcdef\n"),
	}
	list := Artifacts(files)
	if len(list) != 1 {
		t.Fatalf("findings %v", list)
	}
	got := list[0].Format("")
	if !strings.HasPrefix(got, "gce/a/startup-script.sh:3: a kubeadm bootstrap token (abcd… sha256:a4b8b245) must not be in a generated artifact") || strings.Contains(got, "0123456789abcdef") {
		t.Errorf("finding %q", got)
	}
	delete(files, "gce/a/startup-script.sh")
	if list := Artifacts(files); len(list) != 0 {
		t.Errorf("clean files: %v", list)
	}
}
