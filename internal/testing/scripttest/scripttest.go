// Package scripttest runs a generated startup script for real under bash,
// against local fakes of the GCE metadata server and Secret Manager, with a
// stub kubeadm on PATH that keeps the configuration it is given.
package scripttest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/model"
)

// VM is what the fake metadata server says about the VM and its project.
type VM struct {
	Project       string
	NumericID     string
	Zone          string
	Instance      string
	InstanceID    string // instance/id; "4105349117032215212" when empty
	JoinToken     string // served by Secret Manager and project metadata
	MetadataKey   string // project metadata key holding JoinToken, if any
	Secret        string // Secret Manager secret holding JoinToken, if any
	SecretVersion string
}

// Options change a run.
type Options struct {
	// FailJoins makes the stub kubeadm fail its first N joins.
	FailJoins int
	// HangJoins makes the stub kubeadm hang (sleep) in its first N joins,
	// after the failures, as kubeadm does when discovery cannot reach the
	// control plane.
	HangJoins int
	// MetadataOutage makes the metadata server answer 503 to its first N requests.
	MetadataOutage int
	// Faults are injected into the fakes' answers, see Fault.
	Faults []Fault
	// Constants replace the values of the script's constants (deadline,
	// delays, timeouts, directories), by name, e.g. {"JOIN_DEADLINE":
	// "10"}: see WithConstants. Run points METADATA_URL and
	// SECRET_MANAGER_URL at the fakes, KUBERNETES_DIR, STATE_DIR and
	// KUBELET_DIR at the run's directories (set those with the fields
	// below, which the stub kubeadm shares), and sets RETRY_DELAY and
	// HTTP_RETRY_DELAY to 0 unless given.
	Constants map[string]string
	// Hide leaves these commands off the script's PATH (a node image
	// without them).
	Hide []string
	// StateDir, KubernetesDir and KubeletDir reuse directories of an
	// earlier run (a reboot).
	StateDir, KubernetesDir, KubeletDir string
}

// Fault actions.
const (
	Drop = "drop" // close the connection without an answer (curl exit 52)
	Hang = "hang" // answer only after Fault.Hang
)

// Fault changes the answers to the next Count requests whose path
// contains Path (every request if Path is empty): Action Drop or Hang, or
// else the HTTP Status. The first fault with requests left that matches
// a request applies.
type Fault struct {
	Path   string
	Count  int
	Action string
	Status int
	Hang   time.Duration
}

// Result is what a run left behind.
type Result struct {
	ExitCode    int
	Stderr      string
	JoinConfigs [][]byte // one per kubeadm join call, in order
	// JoinKeys are, per kubeadm join call, the file
	// KubeletDir/pki/kubelet-client.key.tmp when it was called (empty if
	// there was none): the key the kubelet's TLS bootstrap loads.
	JoinKeys      [][]byte
	KubeletPatch  []byte   // the patch file present at the last join
	KubeadmCalls  []string // argv of every kubeadm call
	StateDir      string
	KubernetesDir string
	KubeletDir    string
	// Requests lists the paths the fakes served, in order.
	Requests []string
	// JoinConfigMode is the octal permission of the join configuration
	// file at the last join, as kubeadm saw it.
	JoinConfigMode string
	// NftRulesets are the rulesets given to nft, one per call.
	NftRulesets []string
	// SystemctlCalls are the arguments of every systemctl call.
	SystemctlCalls []string
	// Etc holds what the script wrote under /etc, at the same paths
	// (the upper directory of the overlay).
	Etc string
	// Elapsed is the script's wall-clock run time.
	Elapsed time.Duration
	// GuestAttributes are the guest attributes the script wrote, by
	// "<namespace>/<key>": the last value of each.
	GuestAttributes map[string]string
}

// fakes serves the metadata server and Secret Manager.
type fakes struct {
	t        testing.TB
	vm       VM
	outage   int
	mu       sync.Mutex
	faults   []Fault
	requests []string
	// guest holds the guest attributes written, by namespace/key.
	guest map[string]string
}

// fault takes the fault that applies to path, if any.
func (f *fakes) fault(path string) (Fault, bool) {
	for i := range f.faults {
		fl := &f.faults[i]
		if fl.Count > 0 && strings.Contains(path, fl.Path) {
			fl.Count--
			return *fl, true
		}
	}
	return Fault{}, false
}

const accessToken = "ya29.fake-access-token"

func (f *fakes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.URL.Path)
	outage := f.outage > 0
	if outage {
		f.outage--
	}
	fault, faulty := f.fault(r.URL.Path)
	f.mu.Unlock()
	if faulty {
		switch fault.Action {
		case Drop:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		case Hang:
			select {
			case <-r.Context().Done():
				return
			case <-time.After(fault.Hang):
			}
		default:
			http.Error(w, http.StatusText(fault.Status), fault.Status)
			return
		}
	}
	if strings.HasPrefix(r.URL.Path, "/computeMetadata/v1/") {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "missing Metadata-Flavor: Google", http.StatusForbidden)
			return
		}
		w.Header().Set("Metadata-Flavor", "Google")
		if outage {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		p := strings.TrimPrefix(r.URL.Path, "/computeMetadata/v1/")
		if r.Method == http.MethodPut {
			f.putGuestAttribute(w, r, p)
			return
		}
		switch {
		case p == "instance/id":
			id := f.vm.InstanceID
			if id == "" {
				id = "4105349117032215212"
			}
			fmt.Fprint(w, id)
		case p == "instance/name":
			fmt.Fprint(w, f.vm.Instance)
		case p == "instance/zone":
			fmt.Fprintf(w, "projects/%s/zones/%s", f.vm.NumericID, f.vm.Zone)
		case p == "project/project-id":
			fmt.Fprint(w, f.vm.Project)
		case p == "instance/service-accounts/default/token":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"%s","expires_in":3599,"token_type":"Bearer"}`, accessToken)
		case f.vm.MetadataKey != "" && p == "project/attributes/"+f.vm.MetadataKey:
			fmt.Fprint(w, f.vm.JoinToken)
		default:
			http.NotFound(w, r)
		}
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/projects/") && strings.HasSuffix(r.URL.Path, ":access") {
		want := fmt.Sprintf("/v1/projects/%s/secrets/%s/versions/%s:access", f.vm.Project, f.vm.Secret, f.vm.SecretVersion)
		if r.URL.Path != want {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+accessToken {
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		resp := map[string]any{
			"name":    strings.TrimPrefix(strings.TrimSuffix(want, ":access"), "/v1/"),
			"payload": map[string]string{"data": base64.StdEncoding.EncodeToString([]byte(f.vm.JoinToken + "\n")), "dataCrc32c": "0"},
		}
		json.NewEncoder(w).Encode(resp)
		return
	}
	http.NotFound(w, r)
}

// putGuestAttribute stores a guest attribute, as the metadata server
// does for a PUT of instance/guest-attributes/<namespace>/<key> with the
// value as the body (Compute Engine documentation, "Set and query guest
// attributes"): namespace and key of letters, digits, "-" and "_", the
// value at most 256 bytes; no other path may be written.
func (f *fakes) putGuestAttribute(w http.ResponseWriter, r *http.Request, p string) {
	rest, ok := strings.CutPrefix(p, "instance/guest-attributes/")
	ns, key, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || !guestNameRE.MatchString(ns) || !guestNameRE.MatchString(key) {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 1024))
	if err != nil || len(b) > 256 {
		http.Error(w, "value too long", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	if f.guest == nil {
		f.guest = map[string]string{}
	}
	f.guest[ns+"/"+key] = string(b)
	f.mu.Unlock()
}

var guestNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// stubKubeadm records each call. join refuses to run where kubelet.conf
// exists (kubeadm's FileAvailable preflight check), copies the --config
// file (and its permissions) and the kubelet patch from the patches
// directory it names, which must be the one nodegen renders (the script
// puts it under the run's STATE_DIR, STUB_STATE_DIR); it fails, then
// hangs, while countdowns last, and on success writes what a real join
// leaves: the kubelet's configuration and flags in the run's KUBELET_DIR
// (STUB_KUBELET_DIR), its client certificate and key in its pki and
// kubelet.conf (in STUB_KUBERNETES_DIR) naming them. reset
// deletes what kubeadm reset's cleanup-node phase deletes on a worker
// (kubernetes/kubernetes cmd/kubeadm/app/cmd/phases/reset/cleanupnode.go,
// v1.37.2): the contents of the kubelet's directory (not the directory,
// which may be a mount point), of KUBERNETES_DIR/manifests and /pki, and
// the kubeconfig files.
const stubKubeadm = `#!/usr/bin/env bash
set -euo pipefail
printf '%s\n' "$*" >>"${STUB_DIR}/calls"
clean() {
	case "$1" in
	/dev/shm/nodegen-ssd-*) ;;
	/ | /proc | /proc/* | /sys | /sys/* | /dev | /dev/*) echo "stub kubeadm: not cleaning $1" >&2; exit 64 ;;
	esac
	[[ ! -d "$1" ]] || find "$1" -mindepth 1 -delete
}
case "$1" in
join)
	[[ "$2" == --config ]] || { echo "stub kubeadm: want join --config FILE" >&2; exit 64; }
	if [[ -e "${STUB_KUBERNETES_DIR}/kubelet.conf" ]]; then
		echo "stub kubeadm: [ERROR FileAvailable--etc-kubernetes-kubelet.conf]: ${STUB_KUBERNETES_DIR}/kubelet.conf already exists" >&2
		exit 1
	fi
	n=$(ls "${STUB_DIR}" | grep -c '^join-config-[0-9]' || true)
	cp "$3" "${STUB_DIR}/join-config-${n}.yaml"
	stat -c %a "$3" >"${STUB_DIR}/join-config-mode"
	# The key the kubelet's TLS bootstrap would load, as kubeadm starts it.
	cp "${STUB_KUBELET_DIR}/pki/kubelet-client.key.tmp" "${STUB_DIR}/join-key-${n}.pem" 2>/dev/null || : >"${STUB_DIR}/join-key-${n}.pem"
	dir=$(sed -n 's/^  directory: \(.*\)$/\1/p' "$3")
	[[ "${dir}" == ` + "'" + model.NodePatchesDir + "'" + ` ]] || { echo "stub kubeadm: patches directory ${dir}" >&2; exit 64; }
	cp "${STUB_STATE_DIR}/patches/kubeletconfiguration+merge.yaml" "${STUB_DIR}/kubelet-patch.yaml"
	left=$(cat "${STUB_DIR}/fail-joins")
	if ((left > 0)); then
		echo $((left - 1)) >"${STUB_DIR}/fail-joins"
		echo "stub kubeadm: discovery timed out" >&2
		exit 1
	fi
	left=$(cat "${STUB_DIR}/hang-joins")
	if ((left > 0)); then
		echo $((left - 1)) >"${STUB_DIR}/hang-joins"
		echo "stub kubeadm: waiting for the control plane" >&2
		exec sleep 3600
	fi
	mkdir -p "${STUB_KUBERNETES_DIR}/pki" "${STUB_KUBELET_DIR}/pki"
	echo "ca" >"${STUB_KUBERNETES_DIR}/pki/ca.crt"
	echo "kind: KubeletConfiguration" >"${STUB_KUBELET_DIR}/config.yaml"
	echo "KUBELET_KUBEADM_ARGS=" >"${STUB_KUBELET_DIR}/kubeadm-flags.env"
	cp "${STUB_DIR}/kubelet-client.pem" "${STUB_KUBELET_DIR}/pki/kubelet-client-current.pem"
	cat >"${STUB_KUBERNETES_DIR}/kubelet.conf" <<EOF
apiVersion: v1
kind: Config
clusters:
- cluster:
    server: https://control-plane.invalid:6443
  name: default-cluster
users:
- name: default-auth
  user:
    client-certificate: ${STUB_KUBELET_DIR}/pki/kubelet-client-current.pem
    client-key: ${STUB_KUBELET_DIR}/pki/kubelet-client-current.pem
EOF
	;;
reset)
	clean "${STUB_KUBELET_DIR}"
	clean "${STUB_KUBERNETES_DIR}/manifests"
	clean "${STUB_KUBERNETES_DIR}/pki"
	for f in admin.conf kubelet.conf bootstrap-kubelet.conf controller-manager.conf scheduler.conf; do
		rm -rf "${STUB_KUBERNETES_DIR:?}/${f}"
	done
	;;
*) echo "stub kubeadm: unexpected call: $*" >&2; exit 64 ;;
esac
`

// stubNft stands in for nft, which would change the test machine's own
// firewall: it keeps the ruleset it is given, one file per call. The
// netns tests run the real nft in namespaces of their own.
const stubNft = `#!/usr/bin/env bash
set -euo pipefail
[[ $# == 2 && "$1" == -f ]] || { echo "stub nft: unexpected call: $*" >&2; exit 64; }
n=$(ls "${STUB_DIR}" | grep -c '^nft-' || true)
cat -- "$2" >"${STUB_DIR}/nft-${n}"
`

// stubSystemctl stands in for systemctl, which would change the test
// machine's own services: it records its calls.
const stubSystemctl = `#!/usr/bin/env bash
set -euo pipefail
case "$*" in
daemon-reload | "enable "*) printf '%s\n' "$*" >>"${STUB_DIR}/systemctl-calls" ;;
*) echo "stub systemctl: unexpected call: $*" >&2; exit 64 ;;
esac
`

// inVM runs a script in a mount namespace of its own in which /etc is an
// overlay whose changes land in ETC_UPPER: what the script writes there
// (a systemd unit, say) the test reads, and the machine's /etc is left
// as it was.
const inVM = `set -euo pipefail
mount -t overlay overlay -o "lowerdir=/etc,upperdir=${ETC_UPPER},workdir=${ETC_WORK}" /etc
unset ETC_UPPER ETC_WORK
exec bash "$1"
`

// RequireVM skips the test unless scripts can run as Run runs them: as
// root, in a mount namespace of their own (unshare, overlayfs); under
// NODEGEN_REQUIRE_NETNS=1 (CI) it fails instead.
func RequireVM(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range []string{"unshare", "mount", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("running a startup script as at boot needs %s (a mount namespace with /etc as an overlay)", strings.Join(missing, ", "))
	if os.Getenv("NODEGEN_REQUIRE_NETNS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Run runs script under bash as GCE would at boot, against fakes serving
// vm, as root in a mount namespace of its own whose /etc is an overlay
// (Result.Etc).
func Run(t testing.TB, script []byte, vm VM, opt Options) Result {
	t.Helper()
	f := &fakes{t: t, vm: vm, outage: opt.MetadataOutage, faults: append([]Fault(nil), opt.Faults...)}
	srv := httptest.NewServer(f)
	defer srv.Close()

	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	stub := filepath.Join(tmp, "stub")
	for _, d := range []string{bin, stub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	RequireVM(t)
	for name, body := range map[string]string{"kubeadm": stubKubeadm, "nft": stubNft, "systemctl": stubSystemctl} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, n := range map[string]int{"fail-joins": opt.FailJoins, "hang-joins": opt.HangJoins} {
		if err := os.WriteFile(filepath.Join(stub, name), []byte(fmt.Sprint(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(stub, "kubelet-client.pem"), KubeletClientPEM(t, vm.Instance, time.Now().Add(365*24*time.Hour)), 0o600); err != nil {
		t.Fatal(err)
	}
	stateDir, kubeDir, kubeletDir := opt.StateDir, opt.KubernetesDir, opt.KubeletDir
	if stateDir == "" {
		stateDir = filepath.Join(tmp, "var-lib-nodegen")
	}
	if kubeDir == "" {
		kubeDir = filepath.Join(tmp, "etc-kubernetes")
	}
	if kubeletDir == "" {
		kubeletDir = filepath.Join(tmp, "var-lib-kubelet")
	}
	constants := map[string]string{
		"METADATA_URL":     srv.URL + "/computeMetadata/v1",
		"KUBERNETES_DIR":   kubeDir,
		"STATE_DIR":        stateDir,
		"KUBELET_DIR":      kubeletDir,
		"RETRY_DELAY":      "0",
		"HTTP_RETRY_DELAY": "0",
	}
	if hasConstant(script, "SECRET_MANAGER_URL") {
		constants["SECRET_MANAGER_URL"] = srv.URL + "/v1"
	}
	for name, v := range opt.Constants {
		switch name {
		case "KUBERNETES_DIR", "STATE_DIR", "KUBELET_DIR":
			t.Fatalf("Options.Constants sets %s: set Options.KubernetesDir, StateDir or KubeletDir, which the stub kubeadm shares", name)
		}
		constants[name] = v
	}
	script, err := WithConstants(script, constants)
	if err != nil {
		t.Fatalf("the startup script: %v", err)
	}
	scriptPath := filepath.Join(tmp, "startup-script.sh")
	if err := os.WriteFile(scriptPath, script, 0o755); err != nil {
		t.Fatal(err)
	}
	// The overlay's directories are named by mount options, which a comma
	// in t.TempDir()'s name (the test's name) would split.
	overlay, err := os.MkdirTemp("", "nodegen-vm-etc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(overlay) })
	etc := filepath.Join(overlay, "upper")
	for _, d := range []string{etc, filepath.Join(overlay, "work")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "bash", "-c", inVM, "in-vm", scriptPath)
	cmd.Env = []string{
		"ETC_UPPER=" + etc,
		"ETC_WORK=" + filepath.Join(overlay, "work"),
		"PATH=" + bin + string(os.PathListSeparator) + pathWithout(t, filepath.Join(tmp, "path"), opt.Hide),
		"HOME=" + tmp,
		"STUB_DIR=" + stub,
		"STUB_KUBERNETES_DIR=" + kubeDir,
		"STUB_STATE_DIR=" + stateDir,
		"STUB_KUBELET_DIR=" + kubeletDir,
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	// A hung script or a child it left behind must not hang the test.
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err = cmd.Run()
	res := Result{Stderr: stderr.String(), StateDir: stateDir, KubernetesDir: kubeDir, KubeletDir: kubeletDir, Etc: etc, Elapsed: time.Since(start)}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running the startup script: %v", err)
		}
		res.ExitCode = ee.ExitCode()
	}
	for i := 0; ; i++ {
		b, err := os.ReadFile(filepath.Join(stub, fmt.Sprintf("join-config-%d.yaml", i)))
		if err != nil {
			break
		}
		res.JoinConfigs = append(res.JoinConfigs, b)
		k, _ := os.ReadFile(filepath.Join(stub, fmt.Sprintf("join-key-%d.pem", i)))
		res.JoinKeys = append(res.JoinKeys, k)
	}
	for i := 0; ; i++ {
		b, err := os.ReadFile(filepath.Join(stub, fmt.Sprintf("nft-%d", i)))
		if err != nil {
			break
		}
		res.NftRulesets = append(res.NftRulesets, string(b))
	}
	res.KubeletPatch, _ = os.ReadFile(filepath.Join(stub, "kubelet-patch.yaml"))
	if mode, err := os.ReadFile(filepath.Join(stub, "join-config-mode")); err == nil {
		res.JoinConfigMode = strings.TrimSpace(string(mode))
	}
	if calls, err := os.ReadFile(filepath.Join(stub, "systemctl-calls")); err == nil {
		res.SystemctlCalls = strings.Split(strings.TrimSpace(string(calls)), "\n")
	}
	if calls, err := os.ReadFile(filepath.Join(stub, "calls")); err == nil {
		res.KubeadmCalls = strings.Split(strings.TrimSpace(string(calls)), "\n")
	}
	f.mu.Lock()
	res.Requests = append(res.Requests, f.requests...)
	res.GuestAttributes = maps.Clone(f.guest)
	f.mu.Unlock()
	return res
}

// pathWithout returns this process's PATH, or, when hide names commands, a
// PATH of one directory dir holding links to every command of this PATH
// except those.
func pathWithout(t testing.TB, dir string, hide []string) string {
	t.Helper()
	if len(hide) == 0 {
		return os.Getenv("PATH")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			link := filepath.Join(dir, e.Name())
			if slices.Contains(hide, e.Name()) {
				continue
			}
			if _, err := os.Lstat(link); err == nil {
				continue // an earlier PATH entry wins
			}
			if err := os.Symlink(filepath.Join(d, e.Name()), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}
