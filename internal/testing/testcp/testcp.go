package testcp

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Versions of the binaries that hack/testcp/build.sh builds by default. The
// default binary folder is named after them, so they must match the defaults
// in build.sh (TestDefaultVersionsMatchBuildScript checks this).
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.6.16"
)

// Environment variables read by this package.
const (
	// EnvDir names a folder holding the kube-apiserver and etcd binaries. It
	// overrides the default folder in the build cache.
	EnvDir = "NODEGEN_TESTCP_DIR"
	// EnvCache is the cache root that hack/testcp/build.sh writes to. Default:
	// ${XDG_CACHE_HOME:-$HOME/.cache}/nodegen/testcp.
	EnvCache = "NODEGEN_TESTCP_CACHE"
	// EnvRequire, when set to "1", makes Start fail the test instead of
	// skipping it when the binaries (or kubectl, for the Kubectl helpers) are
	// missing. CI sets it so that these tests can never be skipped silently.
	EnvRequire = "NODEGEN_REQUIRE_TESTCP"
)

// Timeouts used by Start and the cleanup it registers.
const (
	readyTimeout  = 60 * time.Second // etcd health, then kube-apiserver /readyz
	stopGrace     = 10 * time.Second // SIGTERM to SIGKILL
	kubectlLimit  = 5 * time.Minute  // one Kubectl call
	logTailLines  = 30
	startAttempts = 3 // a free port can be taken between picking and binding it
)

const buildHint = "build them with `make testcp` or `hack/testcp/build.sh`, " +
	"or set " + EnvDir + " to a folder holding kube-apiserver and etcd"

// AdminUser is the user name of the admin token; it is in the group
// system:masters, which RBAC allows everything, impersonation included.
const AdminUser = "admin"

// ControlPlane is a running etcd and kube-apiserver, started by Start and
// stopped by the cleanup that Start registers.
type ControlPlane struct {
	// URL is the API server's base URL, https://127.0.0.1:PORT. Its
	// certificate is self-signed: clients must skip verification.
	URL string
	// Token is the admin bearer token (user AdminUser, group system:masters).
	Token string
	// Kubeconfig is the path of an admin kubeconfig file (token auth,
	// insecure-skip-tls-verify), usable with kubectl --kubeconfig.
	Kubeconfig string
	// EtcdURL is the etcd client URL, http://127.0.0.1:PORT.
	EtcdURL string
	// Dir is the temporary folder holding the data, keys, logs and
	// kubeconfig files. It is removed when the test ends.
	Dir string
	// APIServerLog and EtcdLog are the paths of the processes' output.
	APIServerLog, EtcdLog string
	// CACert is the PEM of the cluster CA: the API server trusts the
	// client certificates it signs (--client-ca-file), Node signs the
	// kubelets' with it, and StartControllerManager's signers use it, as
	// kubeadm's controller-manager does.
	CACert []byte
	// Options are the options the control plane was started with.
	Options Options

	admin                 *User // set once the control plane is ready
	caCertFile, caKeyFile string
	bin                   string // the binaries' folder
	client                *http.Client
	kubeCache             string
	apiserver             *process
	etcd                  *process
}

// User is a client identity on a ControlPlane, with its own kubeconfig.
type User struct {
	// Name is the user name the API server sees, for example
	// "system:serviceaccount:kube-system:taint-remover".
	Name string
	// Token is the bearer token in Kubeconfig. For a user made by
	// Impersonate it is the admin token: the identity comes from the
	// impersonation fields of the kubeconfig, which only kubectl applies.
	Token string
	// Kubeconfig is the path of the user's kubeconfig file.
	Kubeconfig string

	cp *ControlPlane
}

// Options choose how StartWith configures the API server.
type Options struct {
	// Production runs kube-apiserver as kubeadm configures it
	// (kubernetes/kubernetes v1.37.2, cmd/kubeadm/app/phases/controlplane/manifests.go
	// getAPIServerCommand and getAuthzModes): --authorization-mode=Node,RBAC
	// and the NodeRestriction admission plugin, so that a kubelet's
	// credentials (Node) reach only what the Node authorizer and
	// NodeRestriction give them; and, once it is ready, creates the RBAC
	// objects of kubeadm init's bootstrap-token phase (KubeadmBindings).
	// Without it the API server authorizes with RBAC alone and admits
	// what NodeRestriction would refuse.
	Production bool
}

// DefaultDir returns the folder where hack/testcp/build.sh puts the binaries
// of the pinned versions: $NODEGEN_TESTCP_CACHE (or
// ${XDG_CACHE_HOME:-$HOME/.cache}/nodegen/testcp) followed by
// k8s-<KubernetesVersion>-etcd-<EtcdVersion>. It does not check that the
// folder exists.
func DefaultDir() (string, error) {
	root := os.Getenv(EnvCache)
	if root == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home := os.Getenv("HOME")
			if home == "" {
				return "", fmt.Errorf("cannot find the testcp cache: none of %s, XDG_CACHE_HOME and HOME is set", EnvCache)
			}
			base = filepath.Join(home, ".cache")
		}
		root = filepath.Join(base, "nodegen", "testcp")
	}
	return filepath.Join(root, "k8s-"+KubernetesVersion+"-etcd-"+EtcdVersion), nil
}

// FindBinaries returns the folder holding the kube-apiserver and etcd
// executables: $NODEGEN_TESTCP_DIR if set, else DefaultDir. The error says
// which file is missing and how to build it.
func FindBinaries() (string, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		var err error
		if dir, err = DefaultDir(); err != nil {
			return "", err
		}
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			return "", fmt.Errorf("no %s test binary at %s: %s", name, p, buildHint)
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			return "", fmt.Errorf("%s is not an executable file: %s", p, buildHint)
		}
	}
	return dir, nil
}

// Start is StartWith with no options: RBAC authorization only, without
// the Node authorizer, NodeRestriction and kubeadm's bindings.
func Start(t testing.TB) *ControlPlane {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith starts etcd and kube-apiserver on 127.0.0.1 with free ports and
// fresh data in a temporary folder, waits until the API server is ready
// (/readyz, plus the default and kube-system namespaces), and registers a
// cleanup that stops both processes (SIGTERM, then SIGKILL after 10s) and
// removes the data. On Linux the processes are also killed if the test
// binary dies without cleaning up (for example on a -timeout panic).
//
// If the binaries are missing (see FindBinaries), Start skips the test, or
// fails it when NODEGEN_REQUIRE_TESTCP=1. Any other problem fails the test,
// with the end of the failing process's log.
//
// The API server runs with RBAC authorization (Node,RBAC and
// NodeRestriction with opts.Production), a token file holding the admin
// token, client certificates of a cluster CA generated here (CACert),
// bootstrap-token authentication (as kubeadm enables it), service-account
// signing keys generated here, and the
// ServiceAccount admission plugin disabled (nothing would create the default
// ServiceAccount it requires). The other default admission plugins stay on;
// in particular TaintNodesByCondition gives every new Node the taint
// node.kubernetes.io/not-ready:NoSchedule, as in a real cluster.
//
// There is no controller-manager, scheduler or kubelet: objects are stored,
// validated, admitted and authorized for real, but nothing reconciles them.
// Deployments and DaemonSets create no Pods, a deleted namespace stays
// Terminating, there is no garbage collection and no default ServiceAccount,
// and node taints change only when a client changes them.
func StartWith(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	bin, err := FindBinaries()
	if err != nil {
		unavailable(t, "testcp: %v", err)
	}
	for attempt := 1; ; attempt++ {
		cp, err := start(t, bin, opts)
		if err == nil {
			return cp
		}
		if !errors.Is(err, errPortInUse) || attempt == startAttempts {
			t.Fatalf("testcp: %v", err)
		}
		t.Logf("testcp: attempt %d: %v; retrying with other ports", attempt, err)
	}
}

var errPortInUse = errors.New("port already in use")

func start(t testing.TB, bin string, opts Options) (*ControlPlane, error) {
	t.Helper()
	began := time.Now()
	dir := t.TempDir()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	apiURL := "https://127.0.0.1:" + strconv.Itoa(ports[2])

	token, err := randomHex(32)
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	// Format: token,user,uid,"group1,group2".
	line := fmt.Sprintf("%s,%s,%s,system:masters\n", token, AdminUser, AdminUser)
	if err := os.WriteFile(tokenFile, []byte(line), 0o600); err != nil {
		return nil, err
	}
	saKey, saPub := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := writeServiceAccountKeys(saKey, saPub); err != nil {
		return nil, err
	}
	caCertFile, caKeyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	caCert, _, err := writeCA(caCertFile, caKeyFile)
	if err != nil {
		return nil, err
	}
	authz, admission := []string{"--authorization-mode=RBAC"}, []string(nil)
	if opts.Production {
		authz = []string{"--authorization-mode=Node,RBAC"}
		admission = []string{"--enable-admission-plugins=NodeRestriction"}
	}

	cp := &ControlPlane{
		URL:          apiURL,
		Token:        token,
		Kubeconfig:   filepath.Join(dir, "admin.kubeconfig"),
		EtcdURL:      etcdURL,
		Dir:          dir,
		APIServerLog: filepath.Join(dir, "kube-apiserver.log"),
		EtcdLog:      filepath.Join(dir, "etcd.log"),
		CACert:       caCert,
		Options:      opts,
		caCertFile:   caCertFile,
		caKeyFile:    caKeyFile,
		kubeCache:    filepath.Join(dir, "kubectl-cache"),
		bin:          bin,
		client: &http.Client{
			Timeout: 5 * time.Second,
			// No proxy: all traffic stays on loopback, whatever
			// HTTPS_PROXY says. No verification: the serving
			// certificate is self-signed.
			Transport: &http.Transport{
				Proxy:           nil,
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
			},
		},
	}
	// Registered before anything starts; it stops whatever did start. It
	// runs before t.TempDir's removal, which was registered earlier.
	t.Cleanup(func() { cp.cleanup(t) })

	cp.etcd, err = startProcess(filepath.Join(bin, "etcd"), cp.EtcdLog,
		"--name=default",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return nil, err
	}
	if err := cp.waitFor(cp.etcd, "etcd", func() (bool, string) {
		code, body, err := cp.get(etcdURL+"/health", false)
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK && strings.Contains(body, `"health":"true"`), body
	}); err != nil {
		cp.stop()
		return nil, err
	}

	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[2]),
		// The default "lease" reconciler refuses a loopback advertise address.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(dir, "certs"), // self-signed serving cert
		"--token-auth-file=" + tokenFile,
		"--client-ca-file=" + caCertFile,
		// Bootstrap tokens (Secrets of type bootstrap.kubernetes.io/token in
		// kube-system) authenticate as in a kubeadm cluster. Without such
		// Secrets this changes nothing.
		"--enable-bootstrap-token-auth",
		"--service-account-issuer=" + apiURL,
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount",
	}
	args = append(append(args, authz...), admission...)
	cp.apiserver, err = startProcess(filepath.Join(bin, "kube-apiserver"), cp.APIServerLog, args...)
	if err != nil {
		cp.stop()
		return nil, err
	}
	if err := cp.waitFor(cp.apiserver, "kube-apiserver", func() (bool, string) {
		code, body, err := cp.get(apiURL+"/readyz?verbose", true)
		if err != nil {
			return false, err.Error()
		}
		if code != http.StatusOK {
			return false, fmt.Sprintf("/readyz: %d %s", code, body)
		}
		// The bootstrap controller creates these shortly after /readyz.
		for _, ns := range []string{"default", "kube-system"} {
			code, body, err := cp.get(apiURL+"/api/v1/namespaces/"+ns, true)
			if err != nil || code != http.StatusOK {
				return false, fmt.Sprintf("namespace %s: %d %s %v", ns, code, body, err)
			}
		}
		return true, ""
	}); err != nil {
		cp.stop()
		return nil, err
	}

	cp.admin = &User{Name: AdminUser, Token: token, Kubeconfig: cp.Kubeconfig, cp: cp}
	if err := cp.writeKubeconfig(cp.Kubeconfig, credentials{token: token}); err != nil {
		return nil, err
	}
	if opts.Production {
		for _, o := range KubeadmBindings() {
			if err := cp.create(o); err != nil {
				return nil, fmt.Errorf("kubeadm's bindings: %w", err)
			}
		}
	}
	version := "unknown version"
	if _, body, err := cp.get(apiURL+"/version", true); err == nil {
		var v struct{ GitVersion string }
		if json.Unmarshal([]byte(body), &v) == nil && v.GitVersion != "" {
			version = v.GitVersion
		}
	}
	mode := "RBAC"
	if opts.Production {
		mode = "Node,RBAC, NodeRestriction and kubeadm's bindings"
	}
	t.Logf("testcp: kube-apiserver %s ready at %s with %s after %v (logs and data in %s)",
		version, apiURL, mode, time.Since(began).Round(10*time.Millisecond), dir)
	return cp, nil
}

// Kubectl runs kubectl as the admin; see User.Kubectl.
func (cp *ControlPlane) Kubectl(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return cp.admin.Kubectl(t, args...)
}

// KubectlCmd returns kubectl as the admin, ready to run; see User.KubectlCmd.
func (cp *ControlPlane) KubectlCmd(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	return cp.admin.KubectlCmd(t, args...)
}

// Admin returns the admin identity (the same token and kubeconfig as
// cp.Token and cp.Kubeconfig).
func (cp *ControlPlane) Admin() *User { return cp.admin }

// ServiceAccount returns an identity that authenticates as the
// ServiceAccount namespace/name with a real token, as a Pod would. The
// token comes from the TokenRequest API (the serviceaccounts/token
// subresource, what `kubectl create token` calls), which the API server
// serves by itself with the signing key Start generated: no
// controller-manager is involved. The token is valid for 24 hours.
//
// The ServiceAccount must exist first (create or apply it as the admin):
// there is no default ServiceAccount, and the server checks on every request
// that the token's ServiceAccount still exists. The server sees the user
// system:serviceaccount:NS:NAME in the groups system:serviceaccounts,
// system:serviceaccounts:NS and system:authenticated.
//
// Any error fails the test.
func (cp *ControlPlane) ServiceAccount(t testing.TB, namespace, name string) *User {
	t.Helper()
	return cp.serviceAccount(t, namespace, name, "")
}

// PodServiceAccount is like ServiceAccount, but the token is bound to the
// Pod pod in the same namespace (TokenRequest boundObjectRef), like the
// tokens the kubelet projects into a pod's containers. The Pod must exist
// and run as the ServiceAccount (spec.serviceAccountName). If it is bound
// to a Node that exists (spec.nodeName; without a scheduler, set it when
// creating the Pod), the server adds the node's name and UID to the token,
// and to the user's extra info as authentication.kubernetes.io/node-name
// and node-uid. The token stops working once the Pod (or its Node) is
// deleted.
func (cp *ControlPlane) PodServiceAccount(t testing.TB, namespace, name, pod string) *User {
	t.Helper()
	return cp.serviceAccount(t, namespace, name, pod)
}

func (cp *ControlPlane) serviceAccount(t testing.TB, namespace, name, pod string) *User {
	t.Helper()
	what := "ServiceAccount " + namespace + "/" + name
	spec := map[string]any{"expirationSeconds": 86400}
	if pod != "" {
		what += " bound to Pod " + pod
		spec["boundObjectRef"] = map[string]string{"apiVersion": "v1", "kind": "Pod", "name": pod}
	}
	body, err := json.Marshal(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
	if err != nil {
		t.Fatalf("testcp: %v", err)
	}
	u := cp.URL + "/api/v1/namespaces/" + url.PathEscape(namespace) +
		"/serviceaccounts/" + url.PathEscape(name) + "/token"
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("testcp: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+cp.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := cp.client.Do(req)
	if err != nil {
		t.Fatalf("testcp: TokenRequest for %s: %v", what, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("testcp: TokenRequest for %s: %v", what, err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusNotFound {
			hint = " (create the ServiceAccount, and the Pod, first)"
		}
		t.Fatalf("testcp: TokenRequest for %s: %s: %s%s", what, resp.Status, bytes.TrimSpace(b), hint)
	}
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &tr); err != nil || tr.Status.Token == "" {
		t.Fatalf("testcp: TokenRequest for %s: no token in %s (%v)", what, b, err)
	}
	path, err := cp.newKubeconfig("sa-"+namespace+"-"+name, credentials{token: tr.Status.Token})
	if err != nil {
		t.Fatalf("testcp: %v", err)
	}
	return &User{
		Name:       "system:serviceaccount:" + namespace + ":" + name,
		Token:      tr.Status.Token,
		Kubeconfig: path,
		cp:         cp,
	}
}

// Impersonate returns an identity that acts as any user name and groups
// through impersonation: its kubeconfig holds the admin token plus the
// "as" and "as-groups" fields, which kubectl turns into Impersonate-User and
// Impersonate-Group headers. Authorization and admission (RBAC,
// ValidatingAdmissionPolicy) then see the impersonated user. The user needs
// no object on the server, which suits node identities (system:node:NAME in
// group system:nodes) or a ServiceAccount that should not exist.
//
// For a name system:serviceaccount:NS:NAME with no groups given, the server
// adds the ServiceAccount groups itself. Prefer ServiceAccount to test a
// ServiceAccount, since it also proves the account exists.
//
// User.Token is the admin token: sent without the impersonation headers it
// acts as the admin. Any error fails the test.
func (cp *ControlPlane) Impersonate(t testing.TB, user string, groups ...string) *User {
	t.Helper()
	path, err := cp.newKubeconfig("impersonate", credentials{token: cp.Token, as: user, asGroups: groups})
	if err != nil {
		t.Fatalf("testcp: %v", err)
	}
	return &User{Name: user, Token: cp.Token, Kubeconfig: path, cp: cp}
}

// Kubectl runs kubectl with the user's kubeconfig and returns its output.
// err is nil if kubectl exited 0; otherwise it wraps the *exec.ExitError (or
// the error starting kubectl) and includes stderr. The run is limited to 5
// minutes. If kubectl is not on PATH, the test is skipped, or failed when
// NODEGEN_REQUIRE_TESTCP=1.
func (u *User) Kubectl(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := u.KubectlCmd(t, args...)
	var outBuf, errBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
	t.Logf("kubectl %s (as %s)", strings.Join(args, " "), u.Name)
	if err := cmd.Start(); err != nil {
		return "", "", fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	timer := time.AfterFunc(kubectlLimit, func() { _ = cmd.Process.Kill() })
	err = cmd.Wait()
	timer.Stop()
	stdout, stderr = outBuf.String(), errBuf.String()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr))
	}
	return stdout, stderr, err
}

// KubectlCmd returns an unstarted kubectl command using the user's
// kubeconfig (and a discovery cache inside the control plane's folder), for
// callers that need stdin, streaming output or their own timeout. If kubectl
// is not on PATH, the test is skipped, or failed when
// NODEGEN_REQUIRE_TESTCP=1.
func (u *User) KubectlCmd(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		unavailable(t, "testcp: kubectl not found on PATH: %v", err)
	}
	full := append([]string{"--kubeconfig=" + u.Kubeconfig, "--cache-dir=" + u.cp.kubeCache}, args...)
	cmd := exec.Command(path, full...)
	env := []string{"KUBECONFIG=" + u.Kubeconfig}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	return cmd
}

// unavailable skips the test, or fails it if EnvRequire is "1".
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s (%s=1: failing instead of skipping)", msg, EnvRequire)
	}
	t.Skipf("%s (skipped; %s=1 makes this a failure)", msg, EnvRequire)
}

// waitFor polls ready every 100ms until it reports true, p exits, or
// readyTimeout passes. The error includes the last detail ready gave and
// the end of p's log.
func (cp *ControlPlane) waitFor(p *process, name string, ready func() (bool, string)) error {
	deadline := time.Now().Add(readyTimeout)
	last := ""
	for {
		ok, detail := ready()
		if ok {
			return nil
		}
		if detail != "" {
			last = detail
		}
		if p.exited() {
			tail := p.tail(logTailLines)
			err := fmt.Errorf("%s exited before it was ready (%v); last %d lines of %s:\n%s",
				name, p.exitErr(), logTailLines, p.log, tail)
			if strings.Contains(tail, "address already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v; last check: %s\nlast %d lines of %s:\n%s",
				name, readyTimeout, strings.TrimSpace(last), logTailLines, p.log, p.tail(logTailLines))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// get does a GET, with the admin token if auth, and returns the status code
// and at most 64 KiB of the body.
func (cp *ControlPlane) get(rawURL string, auth bool) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return 0, "", err
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+cp.Token)
	}
	resp, err := cp.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b), err
}

func (cp *ControlPlane) cleanup(t testing.TB) {
	if t.Failed() && cp.admin != nil { // a failed Start already showed the logs
		for _, p := range []*process{cp.apiserver, cp.etcd} {
			if p != nil {
				t.Logf("testcp: the test failed; last %d lines of %s:\n%s", logTailLines, p.log, p.tail(logTailLines))
			}
		}
	}
	if err := cp.stop(); err != nil {
		t.Errorf("testcp: %v", err)
	}
}

// stop stops the API server, then etcd. It is safe to call more than once.
func (cp *ControlPlane) stop() error {
	var errs []error
	for _, p := range []*process{cp.apiserver, cp.etcd} {
		if p != nil {
			errs = append(errs, p.stop(stopGrace))
		}
	}
	cp.client.CloseIdleConnections()
	return errors.Join(errs...)
}

// kubeconfig is the subset of the kubeconfig format (clientcmd/api/v1)
// that testcp writes. JSON is valid YAML, so kubectl reads it.
type kubeconfig struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []namedCluster `json:"clusters"`
	Users          []namedUser    `json:"users"`
	Contexts       []namedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
}

type namedCluster struct {
	Name    string `json:"name"`
	Cluster struct {
		Server                string `json:"server"`
		InsecureSkipTLSVerify bool   `json:"insecure-skip-tls-verify"`
	} `json:"cluster"`
}

type namedUser struct {
	Name string `json:"name"`
	User struct {
		Token string `json:"token,omitempty"`
		// PEM, base64 in the file (encoding/json's form of []byte, and
		// the kubeconfig's).
		ClientCertificateData []byte   `json:"client-certificate-data,omitempty"`
		ClientKeyData         []byte   `json:"client-key-data,omitempty"`
		As                    string   `json:"as,omitempty"`
		AsGroups              []string `json:"as-groups,omitempty"`
	} `json:"user"`
}

// credentials are what a kubeconfig's user presents: a bearer token or a
// client certificate and key (PEM), and whom to impersonate.
type credentials struct {
	token     string
	cert, key []byte
	as        string
	asGroups  []string
}

type namedContext struct {
	Name    string `json:"name"`
	Context struct {
		Cluster string `json:"cluster"`
		User    string `json:"user"`
	} `json:"context"`
}

func (cp *ControlPlane) writeKubeconfig(path string, cred credentials) error {
	const name = "testcp"
	kc := kubeconfig{APIVersion: "v1", Kind: "Config", CurrentContext: name}
	var c namedCluster
	c.Name = name
	c.Cluster.Server = cp.URL
	c.Cluster.InsecureSkipTLSVerify = true
	var u namedUser
	u.Name = name
	u.User.Token = cred.token
	u.User.ClientCertificateData, u.User.ClientKeyData = cred.cert, cred.key
	u.User.As = cred.as
	u.User.AsGroups = cred.asGroups
	var x namedContext
	x.Name = name
	x.Context.Cluster = name
	x.Context.User = name
	kc.Clusters, kc.Users, kc.Contexts = []namedCluster{c}, []namedUser{u}, []namedContext{x}
	b, err := json.MarshalIndent(kc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// newKubeconfig writes a kubeconfig to a new file named after prefix.
func (cp *ControlPlane) newKubeconfig(prefix string, cred credentials) (string, error) {
	f, err := os.CreateTemp(cp.Dir, prefix+"-*.kubeconfig")
	if err != nil {
		return "", err
	}
	path := f.Name()
	if err := f.Close(); err != nil {
		return "", err
	}
	return path, cp.writeKubeconfig(path, cred)
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. They are free
// when returned, but another process may take one before it is bound; Start
// retries when that happens.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close() // held until all are picked, so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeServiceAccountKeys writes a new RSA key pair for signing and
// verifying ServiceAccount tokens: the private key as PKCS#1 PEM, the public
// key as PKIX PEM.
func writeServiceAccountKeys(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	if err := os.WriteFile(keyPath, priv, 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pub, 0o644)
}
