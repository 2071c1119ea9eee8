package k8stest

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/scriptenv"
	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// renewerSource is the test's own source: a cluster whose token lives 2h
// and is renewed every hour, the autoscaler's group and a group that may
// take 10m to join (so superseded tokens stay 40m).
var renewerSource = map[string]string{
	"cluster.cue": `cluster: {
	name:                 "renew"
	kubernetesVersion:    "1.35.2"
	controlPlaneEndpoint: "10.20.0.10:6443"
	caCertHashes: ["sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d"]
	joinToken: {
		secretManager: secret: "join-token"
		ttl:        "2h"
		renewEvery: "1h"
	}
	gcp: {project: "renew-project", region: "us-central1"}
	autoscaler: {nodeGroup: "ca", maxNodeProvisionTime: "8m", singleZone: true}
}
`,
	"groups.cue": `nodeGroups: ca: {
	kind: "gce-static"
	zones: ["us-central1-a"]
	machineType: "e2-standard-2"
	image: "projects/renew-project/global/images/family/k8s"
	min: 1
	max: 1
	taints: [{key: "example.com/dedicated", value: "ca", effect: "NoSchedule"}]
}
nodeGroups: work: {
	kind: "gce"
	zones: ["us-central1-a"]
	machineType: "n2-standard-8"
	image: "projects/renew-project/global/images/family/k8s"
	min: 0
	max: 3
	autoscaling: maxNodeProvisionTime: "10m"
}
`,
}

// renewerEnv is the state of the renewer tests.
type renewerEnv struct {
	cp      *testcp.ControlPlane
	src     *model.Source
	renewal model.Renewal
	script  string   // the ConfigMap's script, in a file
	env     []string // the CronJob container's environment
	sa      *testcp.User
}

// TestJoinTokenRenewer proves the renewer against a real kube-apiserver
// with bootstrap-token authentication: its rendered objects are accepted,
// its ServiceAccount can do nothing but its job (RBAC and the generated
// ValidatingAdmissionPolicy, tried with the ServiceAccount's own token),
// and its script, run under bash against fakes of the metadata server and
// Secret Manager, produces tokens that authenticate as kubeadm's node
// bootstrappers, retires superseded ones, and fails loudly without
// leaving a token behind when Secret Manager fails.
func TestJoinTokenRenewer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range renewerSource {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := pipeline.Load(dir)
	if err != nil {
		t.Fatalf("the test source: %v", err)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	manifest := files[layout.JoinTokenRenewerPath]
	objs, err := k8sdecode.Objects(manifest)
	if err != nil {
		t.Fatal(err)
	}
	e := &renewerEnv{src: l.Fleet.Clusters[0]}
	e.renewal = l.Fleet.Clusters[0].Renewal()
	if e.renewal.Grace() != 40*time.Minute {
		t.Fatalf("grace %v, want 40m (10m provisioning + 30m margin)", e.renewal.Grace())
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			e.script = filepath.Join(t.TempDir(), "join-token-renewer.sh")
			if err := os.WriteFile(e.script, []byte(o.Data["join-token-renewer.sh"]), 0o755); err != nil {
				t.Fatal(err)
			}
		case *batchv1.CronJob:
			for _, v := range o.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env {
				if v.Name != "HOME" {
					e.env = append(e.env, v.Name+"="+v.Value)
				}
			}
		}
	}
	if e.script == "" || len(e.env) == 0 {
		t.Fatalf("no script or no CronJob in %s", layout.JoinTokenRenewerPath)
	}

	e.cp = testcp.StartWith(t, testcp.Options{Production: true})
	for _, step := range [][]string{
		{"create", "--dry-run=server", "--validate=strict", "-f", "-"},
		{"create", "--validate=strict", "-f", "-"},
	} {
		if _, _, err := kubectl(t, e.cp.Admin(), string(manifest), step...); err != nil {
			t.Fatal(err)
		}
	}
	e.sa = e.cp.ServiceAccount(t, model.WorkloadNamespace, model.JoinTokenRenewer.Name())

	t.Run("LeastPrivilege", e.testLeastPrivilege)
	t.Run("Script", e.testScript)
}

// tokenSecret returns a bootstrap token Secret as the renewer creates it,
// changed by edit.
func (e *renewerEnv) tokenSecret(id string, edit func(*corev1.Secret)) string {
	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system",
			Labels: map[string]string{model.JoinTokenLabelKey: model.JoinTokenLabelValue}},
		Type: model.BootstrapTokenType,
		Data: map[string][]byte{
			"token-id":                       []byte(id),
			"token-secret":                   []byte("0123456789abcdef"),
			"expiration":                     []byte(time.Now().Add(e.renewal.TTL).UTC().Format(time.RFC3339)),
			"usage-bootstrap-authentication": []byte("true"),
			"usage-bootstrap-signing":        []byte("true"),
			"auth-extra-groups":              []byte(model.CloudBootstrapGroup),
			"description":                    []byte("test"),
		},
	}
	if edit != nil {
		edit(s)
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func (e *renewerEnv) testLeastPrivilege(t *testing.T) {
	policy := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ", model.JoinTokenRenewer.Name(), model.JoinTokenRenewer.Name())
	rbac := func(verb, ns string) string {
		return fmt.Sprintf("User %q cannot %s resource \"secrets\" in API group \"\" in the namespace %q", model.JoinTokenRenewer.User(), verb, ns)
	}
	expire := func(d time.Duration) func(*corev1.Secret) {
		return func(s *corev1.Secret) { s.Data["expiration"] = []byte(time.Now().Add(d).UTC().Format(time.RFC3339)) }
	}
	set := func(k, v string) func(*corev1.Secret) { return func(s *corev1.Secret) { s.Data[k] = []byte(v) } }
	// Someone else's token (as kubeadm token create makes it) and an
	// ordinary Secret, both in kube-system.
	e.adminCreate(t, e.tokenSecret("kubadm", func(s *corev1.Secret) { s.Labels = nil }))
	e.adminCreate(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"ordinary","namespace":"kube-system"},"stringData":{"k":"v"}}`)
	e.adminCreate(t, e.tokenSecret("mine01", nil)) // the renewer's, for update attempts

	// The server enforces a new ValidatingAdmissionPolicy only once its
	// admission plugin has seen the policy and its binding, a moment after
	// they were created: wait for it with a dry run the policy must deny.
	eventually(t, 30*time.Second, "the renewer's policy enforced", func() string {
		_, stderr, err := kubectl(t, e.sa, e.tokenSecret("wait01", func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }),
			"create", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(stderr, policy) {
			return fmt.Sprintf("dry run of an Opaque Secret: err %v, %s", err, stderr)
		}
		return ""
	})

	cases := []struct {
		name  string
		stdin string
		args  []string
		want  string // "" allowed; else the error's substring
	}{
		{"CreateToken", e.tokenSecret("abc123", nil), []string{"create", "-f", "-"}, ""},
		{"DeleteOwnToken", "", []string{"delete", "secret", "-n", "kube-system", "bootstrap-token-abc123", "--wait=false"}, ""},

		{"OtherType", e.tokenSecret("typ001", func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), []string{"create", "-f", "-"},
			policy + "the join-token renewer may only write Secrets of type bootstrap.kubernetes.io/token, not Opaque"},
		{"OtherNamespace", e.tokenSecret("nsp001", func(s *corev1.Secret) { s.Namespace = "default" }), []string{"create", "-f", "-"}, rbac("create", "default")},
		{"NoLabel", e.tokenSecret("lab001", func(s *corev1.Secret) { s.Labels = nil }), []string{"create", "-f", "-"},
			"is not labelled nodegen.dev/join-token=renewer"},
		{"NoExpiration", e.tokenSecret("exp001", func(s *corev1.Secret) { delete(s.Data, "expiration") }), []string{"create", "-f", "-"}, "must have exactly the data keys"},
		{"ExpirationTooFar", e.tokenSecret("exp002", expire(e.renewal.TTL+time.Hour)), []string{"create", "-f", "-"}, "must expire (YYYY-MM-DDTHH:MM:SSZ) after its creation and at most 2h5m later"},
		{"ExpirationPast", e.tokenSecret("exp003", expire(-time.Minute)), []string{"create", "-f", "-"}, "must expire (YYYY-MM-DDTHH:MM:SSZ)"},
		{"ExpirationWithOffset", e.tokenSecret("exp005", set("expiration", time.Now().Add(time.Hour).Format("2006-01-02T15:04:05-07:00"))), []string{"create", "-f", "-"},
			"must expire (YYYY-MM-DDTHH:MM:SSZ)"},
		{"ExpirationNotRFC3339", e.tokenSecret("exp004", set("expiration", "tomorrow")), []string{"create", "-f", "-"}, "must expire (YYYY-MM-DDTHH:MM:SSZ)"},
		{"NoSigning", e.tokenSecret("use001", set("usage-bootstrap-signing", "false")), []string{"create", "-f", "-"}, "must be usable for authentication and signing"},
		{"MastersGroup", e.tokenSecret("grp001", set("auth-extra-groups", "system:masters")), []string{"create", "-f", "-"}, "in the group " + model.CloudBootstrapGroup + " only"},
		{"ExtraGroup", e.tokenSecret("grp002", set("auth-extra-groups", model.CloudBootstrapGroup+",system:masters")), []string{"create", "-f", "-"}, "in the group " + model.CloudBootstrapGroup + " only"},
		{"ExtraKey", e.tokenSecret("key001", set("usage-bootstrap-extra", "true")), []string{"create", "-f", "-"}, "must have exactly the data keys"},
		{"NameNotID", e.tokenSecret("nam001", func(s *corev1.Secret) { s.Name = "bootstrap-token-zzzzzz" }), []string{"create", "-f", "-"}, "must be named bootstrap-token-<token-id>"},
		{"ShortSecret", e.tokenSecret("sec001", set("token-secret", "short")), []string{"create", "-f", "-"}, "must be named bootstrap-token-<token-id>"},

		{"DeleteOthersToken", "", []string{"delete", "secret", "-n", "kube-system", "bootstrap-token-kubadm", "--wait=false"},
			"is not labelled nodegen.dev/join-token=renewer"},
		{"DeleteOrdinarySecret", "", []string{"delete", "secret", "-n", "kube-system", "ordinary", "--wait=false"},
			"may only write Secrets of type bootstrap.kubernetes.io/token, not Opaque"},
		{"DeleteElsewhere", "", []string{"delete", "secret", "-n", "default", "whatever", "--wait=false"}, rbac("delete", "default")},
		{"GetSecret", "", []string{"get", "secret", "-n", "kube-system", "ordinary"}, rbac("get", "kube-system")},
		{"GetOwnToken", "", []string{"get", "secret", "-n", "kube-system", "bootstrap-token-mine01"}, rbac("get", "kube-system")},
		{"ListSecrets", "", []string{"get", "secrets", "-n", "kube-system"}, rbac("list", "kube-system")},
		{"WatchSecrets", "", []string{"get", "--raw", "/api/v1/namespaces/kube-system/secrets?watch=1&timeoutSeconds=1"}, "forbidden"},
		{"UpdateOwnToken", e.tokenSecret("mine01", expire(time.Hour)), []string{"replace", "--raw", "/api/v1/namespaces/kube-system/secrets/bootstrap-token-mine01", "-f", "-"},
			rbac("update", "kube-system")},
		{"ReadConfigMaps", "", []string{"get", "configmaps", "-n", "kube-system"}, "forbidden"},
		{"CreateTokenRequest", "", []string{"create", "token", "-n", "kube-system", model.JoinTokenRenewer.Name()}, "forbidden"},
	}
	for _, c := range cases {
		_, stderr, err := kubectl(t, e.sa, c.stdin, c.args...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: denied: %v", c.name, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: allowed, want denied with %q", c.name, c.want)
		case c.want != "" && !strings.Contains(stderr, c.want):
			t.Errorf("%s: denied with\n%s\nwant %q", c.name, stderr, c.want)
		}
	}
	// kubectl patch reads the object first; a PATCH sent directly is
	// refused by RBAC for what it is.
	code, body := e.request(t, e.sa.Token, http.MethodPatch, "/api/v1/namespaces/kube-system/secrets/bootstrap-token-mine01",
		"application/merge-patch+json", `{"metadata":{"labels":{"x":"y"}}}`)
	var status metav1.Status
	_ = json.Unmarshal([]byte(body), &status)
	if code != http.StatusForbidden || !strings.Contains(status.Message, rbac("patch", "kube-system")) {
		t.Errorf("PatchOwnToken: HTTP %d %s; want 403 from RBAC", code, body)
	}
	// What RBAC would let through if someone broadened it, the policy
	// still denies: updating a token, writing another namespace's Secrets.
	e.adminCreate(t, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"renewer-broadened"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},
"subjects":[{"kind":"ServiceAccount","name":"`+model.JoinTokenRenewer.Name()+`","namespace":"kube-system"}]}`)
	defer e.admin(t, "delete", "clusterrolebinding", "renewer-broadened")
	for _, c := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"BroadenedUpdate", e.tokenSecret("mine01", expire(time.Hour)), []string{"replace", "--raw", "/api/v1/namespaces/kube-system/secrets/bootstrap-token-mine01", "-f", "-"}, policy + "the join-token renewer may only create and delete bootstrap tokens, not UPDATE secrets"},
		{"BroadenedOtherNamespace", e.tokenSecret("nsp002", func(s *corev1.Secret) { s.Namespace = "default" }), []string{"create", "-f", "-"},
			policy + "the join-token renewer may only write Secrets in kube-system, not in default"},
		{"BroadenedDeleteOthersToken", "", []string{"delete", "secret", "-n", "kube-system", "bootstrap-token-kubadm", "--wait=false"}, "is not labelled nodegen.dev/join-token=renewer"},
	} {
		eventually(t, 10*time.Second, c.name, func() string {
			_, stderr, err := kubectl(t, e.sa, c.stdin, c.args...)
			if err == nil {
				t.Fatalf("%s: allowed, want denied with %q", c.name, c.want)
			}
			if !strings.Contains(stderr, c.want) {
				return "denied with " + stderr // RBAC may not have seen the binding yet
			}
			return ""
		})
	}
}

func (e *renewerEnv) adminCreate(t *testing.T, stdin string) {
	t.Helper()
	if _, _, err := kubectl(t, e.cp.Admin(), stdin, "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

func (e *renewerEnv) admin(t *testing.T, args ...string) string {
	t.Helper()
	out, _, err := kubectl(t, e.cp.Admin(), "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// run runs the rendered script under bash as the CronJob would: its
// environment, kubectl with the ServiceAccount's token, and the
// production endpoints it dials itself, metadata.google.internal on port
// 80 and secretmanager.googleapis.com on 443 (its certificate trusted
// through the system CA bundle), served by the fakes in a network
// namespace of the script's own, where the API server is forwarded.
func (e *renewerEnv) run(t *testing.T, f *fakeGCP) (code int, stderr string) {
	t.Helper()
	ns := scriptenv.New(t)
	ns.Serve("metadata.google.internal", 80, servedUnder("/computeMetadata/v1/", http.HandlerFunc(f.serve)))
	ns.ServeTLS("secretmanager.googleapis.com", 443, servedUnder("/v1/", http.HandlerFunc(f.serve)))
	api, err := url.Parse(e.cp.URL)
	if err != nil {
		t.Fatal(err)
	}
	ns.Forward(api.Host)
	home := t.TempDir()
	cmd := ns.Command("bash", e.script)
	cmd.Env = append(slices.Clone(e.env), "PATH="+os.Getenv("PATH"), "HOME="+home, "KUBECONFIG="+e.sa.Kubeconfig)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("renewer exit %d; output:\n%s%s", code, out.String(), errb.String())
	if out.Len() > 0 {
		t.Errorf("the renewer wrote to stdout: %q", out.String())
	}
	return code, errb.String()
}

// servedUnder serves only the paths under prefix with h: one host of the
// fakes answers nothing of the other's API.
func servedUnder(prefix string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, prefix) {
			http.Error(w, "not this host's API: "+r.URL.Path, http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// renewerTokens returns the names of the renewer's token Secrets, as the admin sees them.
func (e *renewerEnv) renewerTokens(t *testing.T) []string {
	t.Helper()
	out := e.admin(t, "get", "secrets", "-n", "kube-system", "-l", model.JoinTokenLabelKey+"="+model.JoinTokenLabelValue, "-o", "name")
	names := strings.Fields(out)
	slices.Sort(names)
	return names
}

// request sends one request to the API server with a bearer token and
// returns the status and body.
func (e *renewerEnv) request(t *testing.T, token, method, path, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.cp.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", contentType)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// whoami authenticates with a bearer token (SelfSubjectReview) and returns
// the user, or the HTTP status when the server refuses the token.
func (e *renewerEnv) whoami(t *testing.T, token string) (*authenticationv1.UserInfo, int) {
	t.Helper()
	code, body := e.request(t, token, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json",
		`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	if code != http.StatusCreated {
		return nil, code
	}
	var r authenticationv1.SelfSubjectReview
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	return &r.Status.UserInfo, code
}

// isNodeBootstrapper fails the test unless token authenticates as the
// bootstrap user of its id in kubeadm's node group.
func (e *renewerEnv) isNodeBootstrapper(t *testing.T, what, token string) {
	t.Helper()
	u, code := e.whoami(t, token)
	id, _, _ := strings.Cut(token, ".")
	if u == nil {
		t.Fatalf("%s: the server refused the token (HTTP %d)", what, code)
	}
	if u.Username != "system:bootstrap:"+id || !slices.Contains(u.Groups, model.CloudBootstrapGroup) || !slices.Contains(u.Groups, "system:bootstrappers") {
		t.Errorf("%s: authenticates as %q in %v; want system:bootstrap:%s in %s", what, u.Username, u.Groups, id, model.CloudBootstrapGroup)
	}
}

// refused fails the test unless the server refuses token (401) within a
// few seconds: the bootstrap-token authenticator reads Secrets from an
// informer's cache, which sees a deletion shortly after it happened.
func (e *renewerEnv) refused(t *testing.T, what, token string) {
	t.Helper()
	eventually(t, 10*time.Second, what, func() string {
		if u, code := e.whoami(t, token); u != nil || code != http.StatusUnauthorized {
			return fmt.Sprintf("the server accepts the token as %+v (HTTP %d); want 401", u, code)
		}
		return ""
	})
}

func (e *renewerEnv) testScript(t *testing.T) {
	f := newFakeGCP(t, e.src.Cluster.GCP.Project, e.src.Cluster.JoinToken.SecretManager.Secret)
	var published []string // every token the fakes saw, to prove none is logged
	var logs []string

	// An expired bootstrap token does not authenticate: the server checks
	// expiration, so a renewer that stopped would show.
	e.adminCreate(t, e.tokenSecret("old001", func(s *corev1.Secret) {
		s.Labels = nil
		s.Data["expiration"] = []byte(time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
	}))
	e.refused(t, "an expired token", "old001.0123456789abcdef")

	// A token made by hand before the renewer ran (not the renewer's),
	// published 3h ago.
	e.adminCreate(t, e.tokenSecret("hand01", func(s *corev1.Secret) { s.Labels = nil }))
	f.add([]byte("hand01.0123456789abcdef\n"), time.Now().Add(-3*time.Hour))
	before := e.renewerTokens(t)

	// Run 1, as if 2h ago: a new token, version 2; version 1 was superseded
	// (by version 2) more than the 40m grace ago: disabled, but the
	// hand-made token is not the renewer's to delete.
	f.setOffset(-2 * time.Hour)
	code, log1 := e.run(t, f)
	logs = append(logs, log1)
	if code != 0 {
		t.Fatalf("run 1 exit %d", code)
	}
	vs := f.snapshot()
	if len(vs) != 2 || vs[0].State != "DISABLED" || vs[1].State != "ENABLED" {
		t.Fatalf("after run 1 versions %+v; want 1 disabled, 2 enabled", states(vs))
	}
	tok1 := string(vs[1].Payload)
	published = append(published, tok1)
	e.isNodeBootstrapper(t, "run 1's token", tok1)
	if !strings.Contains(log1, "is not the renewer's; left to expire") {
		t.Errorf("run 1 did not say it left the hand-made token alone")
	}
	e.admin(t, "get", "secret", "-n", "kube-system", "bootstrap-token-hand01") // still there
	id1, _, _ := strings.Cut(tok1, ".")
	var s corev1.Secret
	if err := json.Unmarshal([]byte(e.admin(t, "get", "secret", "-n", "kube-system", "bootstrap-token-"+id1, "-o", "json")), &s); err != nil {
		t.Fatal(err)
	}
	exp, err := time.Parse(time.RFC3339, string(s.Data["expiration"]))
	if err != nil || exp.Before(time.Now().Add(e.renewal.TTL-time.Minute)) || exp.After(time.Now().Add(e.renewal.TTL)) {
		t.Errorf("run 1's token expires at %v (%v); want now + ttl %v", exp, err, e.renewal.TTL)
	}

	// Run 2, as if 1h ago: version 3; version 2 was superseded 1h ago,
	// past the grace: its token is deleted and it is disabled.
	f.setOffset(-time.Hour)
	code, log2 := e.run(t, f)
	logs = append(logs, log2)
	if code != 0 {
		t.Fatalf("run 2 exit %d", code)
	}
	vs = f.snapshot()
	if len(vs) != 3 || vs[1].State != "DISABLED" || vs[2].State != "ENABLED" {
		t.Fatalf("after run 2 versions %+v; want 2 disabled, 3 enabled", states(vs))
	}
	tok2 := string(vs[2].Payload)
	published = append(published, tok2)
	e.refused(t, "run 1's token after run 2 retired it", tok1)
	e.isNodeBootstrapper(t, "run 2's token", tok2)

	// Run 3, now: version 4; version 3 was superseded just now, and a VM
	// may hold it: it stays, and so does its token.
	f.setOffset(0)
	code, log3 := e.run(t, f)
	logs = append(logs, log3)
	if code != 0 {
		t.Fatalf("run 3 exit %d", code)
	}
	vs = f.snapshot()
	if len(vs) != 4 || vs[2].State != "ENABLED" || vs[3].State != "ENABLED" {
		t.Fatalf("after run 3 versions %+v; want 3 and 4 enabled", states(vs))
	}
	tok3 := string(vs[3].Payload)
	published = append(published, tok3)
	e.isNodeBootstrapper(t, "run 2's token, within its grace", tok2)
	e.isNodeBootstrapper(t, "run 3's token", tok3)
	want := append(slices.Clone(before), "secret/bootstrap-token-"+strings.Split(tok2, ".")[0], "secret/bootstrap-token-"+strings.Split(tok3, ".")[0])
	slices.Sort(want)
	if got := e.renewerTokens(t); !slices.Equal(got, want) {
		t.Errorf("the renewer's tokens after run 3: %v, want %v", got, want)
	}

	// Secret Manager refuses or fails: the run fails loudly, publishes
	// nothing, and leaves no token Secret behind.
	for _, c := range []struct {
		op   string
		code int
		want string
	}{
		{"addVersion", http.StatusServiceUnavailable, "HTTP 503"},
		{"addVersion", http.StatusForbidden, "HTTP 403: Permission or availability failure injected for addVersion"},
		{"token", http.StatusInternalServerError, "the metadata server gave no access token"},
	} {
		f.setFail(c.op, c.code)
		tokensBefore, versionsBefore := e.renewerTokens(t), len(f.snapshot())
		code, log := e.run(t, f)
		logs = append(logs, log)
		f.setFail(c.op, 0)
		if code == 0 || !strings.Contains(log, c.want) || !strings.Contains(log, "ERROR") {
			t.Errorf("%s %d: exit %d, log %q; want a failure saying %q", c.op, c.code, code, log, c.want)
		}
		if got := e.renewerTokens(t); !slices.Equal(got, tokensBefore) {
			t.Errorf("%s %d: the renewer's tokens went from %v to %v", c.op, c.code, tokensBefore, got)
		}
		if n := len(f.snapshot()); n != versionsBefore {
			t.Errorf("%s %d: %d versions, want %d", c.op, c.code, n, versionsBefore)
		}
	}

	// Retiring fails (disable refused): the new token is published, the
	// run fails so the CronJob shows it, and the next run retries. Two
	// hours pass before each run: version 3 is past its grace in the
	// first, 3 and 4 in the second.
	f.shift(2 * time.Hour)
	f.setFail("disable", http.StatusForbidden)
	code, log := e.run(t, f)
	logs = append(logs, log)
	f.setFail("disable", 0)
	vs = f.snapshot()
	if code != 1 || !strings.Contains(log, "could not retire version") || len(vs) != 5 || vs[4].State != "ENABLED" {
		t.Errorf("disable refused: exit %d, versions %v", code, states(vs))
	}
	published = append(published, string(vs[4].Payload))
	e.isNodeBootstrapper(t, "the token published by the run whose cleanup failed", string(vs[4].Payload))
	f.shift(2 * time.Hour)
	if code, log := e.run(t, f); code != 0 {
		t.Errorf("the run after a failed cleanup: exit %d", code)
	} else {
		logs = append(logs, log)
	}
	vs = f.snapshot()
	for _, v := range vs[:len(vs)-2] {
		if v.State != "DISABLED" {
			t.Errorf("version %d is %s after the retry; want every version but the last two disabled: %v", v.Num, v.State, states(vs))
		}
	}
	for _, v := range vs {
		published = append(published, string(v.Payload))
	}

	// No token's secret half is ever logged.
	for _, tok := range published {
		_, secret, _ := strings.Cut(strings.TrimSpace(tok), ".")
		for i, l := range logs {
			if secret != "" && strings.Contains(l, secret) {
				t.Errorf("run %d logged a token secret", i+1)
			}
		}
	}
}

func states(vs []smVersion) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%d:%s@%s", v.Num, v.State, v.Created.Format(time.TimeOnly)))
	}
	return out
}
