package k8stest

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/render/docs"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// tokenRE matches a kubeadm bootstrap token, a word of its own (not a
// part of "policy.admissionregistration.k8s.io").
var tokenRE = regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`)

// day0Deadline is the join deadline the test gives the join script
// (its JOIN_DEADLINE), short so that the test is quick; the script's
// retry delays are shortened to match.
const day0Deadline = 90 * time.Second

// The stand-ins for the tools the day-0 steps run on machines the test
// does not have: ssh to a control-plane node, sudo there, kubeadm (token
// create on the control plane, join on the VM) and gcloud. Each checks
// its arguments and does what the real tool does against the real
// kube-apiserver and the fake Secret Manager:
//   - kubeadm token create writes the bootstrap token Secret kubeadm
//     writes (cmd/kubeadm/app/phases/bootstraptoken/node/token.go), with
//     the admin's credentials, and prints the token;
//   - kubeadm join authenticates with the token at the API server (the TLS
//     bootstrap's first request; the real bootstrap-token authenticator
//     decides) and, if accepted, does the kubelet's TLS bootstrap with it:
//     a new key, a CSR for system:node:<the VM's name> (openssl), then
//     waiting for its certificate; once it has one, it writes kubelet.conf
//     as a join does;
//   - gcloud secrets versions add adds stdin as a new version; gcloud
//     compute project-info add-metadata keeps stdin as the key's value
//     (STUB_METADATA); gcloud
//     compute instance-groups managed list-instances prints the VMs the
//     test put in the MIG. Under STUB_STATE (the day-0 script test) it
//     also enables APIs, makes the image builder VMs (which keep the
//     recipe given to them over ssh and parse it with bash -n) and images
//     of their disks, each refusing what Compute refuses (an API not
//     enabled, a VM that does not exist, an image of a running VM's
//     disk), and adds versions only to a secret terraform apply created.
//     Its project has nothing in it, as under a common organisation
//     policy: no default network, no VM with an external IP; so a builder
//     VM needs a subnetwork an apply made, and ssh to it IAP's API, a
//     firewall rule terraform applied that admits IAP's range to TCP 22 of
//     its tag, and a Cloud NAT for its packages.
var day0Stubs = map[string]string{
	"ssh": `#!/usr/bin/env bash
set -euo pipefail
[[ "$1" == "${EXPECT_SSH_HOST}" ]] || { echo "stub ssh: host $1, want ${EXPECT_SSH_HOST}" >&2; exit 255; }
shift
# ssh runs its remaining words, joined by spaces, in the remote shell.
exec bash -c "$*"
`,
	"sudo": `#!/usr/bin/env bash
exec "$@"
`,
	"kubeadm": `#!/usr/bin/env bash
set -euo pipefail
case "$1 $2" in
"token create")
	shift 2
	# --groups replaces kubeadm's default group (a pflag string slice).
	ttl="" description="" groups=system:bootstrappers:kubeadm:default-node-token
	while (($#)); do
		case "$1" in
		--ttl) ttl="$2"; shift 2 ;;
		--groups) groups="$2"; shift 2 ;;
		--description) description="$2"; shift 2 ;;
		*) echo "stub kubeadm: unexpected argument $1" >&2; exit 64 ;;
		esac
	done
	[[ "${ttl}" =~ ^[0-9]+h$ ]] || { echo "stub kubeadm: --ttl ${ttl}" >&2; exit 64; }
	chars="$(head -c 1024 /dev/urandom | LC_ALL=C tr -dc 'a-z0-9')"
	id="${chars:0:6}" secret="${chars:6:16}"
	((${#id} == 6 && ${#secret} == 16)) || exit 70
	b() { printf '%s' "$1" | base64 | tr -d '\n'; }
	kubectl --kubeconfig "${CP_ADMIN_KUBECONFIG}" create -f - >/dev/null <<EOF
{"apiVersion":"v1","kind":"Secret","type":"bootstrap.kubernetes.io/token",
 "metadata":{"name":"bootstrap-token-${id}","namespace":"kube-system"},
 "data":{"token-id":"$(b "${id}")","token-secret":"$(b "${secret}")",
  "expiration":"$(b "$(date -u -d "now + ${ttl%h} hours" +%Y-%m-%dT%H:%M:%SZ)")",
  "usage-bootstrap-authentication":"$(b true)","usage-bootstrap-signing":"$(b true)",
  "auth-extra-groups":"$(b "${groups}")","description":"$(b "${description}")"}}
EOF
	printf '%s.%s\n' "${id}" "${secret}"
	;;
"join --config")
	token="$(sed -n "s/^    token: '\([a-z0-9]\{6\}\.[a-z0-9]\{16\}\)'$/\1/p" "$3")"
	[[ -n "${token}" ]] || { echo "stub kubeadm: no bootstrap token in $3" >&2; exit 64; }
	code="$(printf 'Authorization: Bearer %s\n' "${token}" | curl --silent --insecure --max-time 10 --header @- \
		--header 'Content-Type: application/json' --output /dev/null --write-out '%{http_code}' \
		--data '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
		"${CP_URL}/apis/authentication.k8s.io/v1/selfsubjectreviews")" || code="curl exit $?"
	if [[ "${code}" != 201 ]]; then
		echo "stub kubeadm: the API server refused the bootstrap token (${code})" >&2
		echo x >>"${STUB_DIR}/refused"
		exit 1
	fi
	# The kubelet's TLS bootstrap: a new key, a CSR for its node name made
	# with the token, then waiting for the certificate.
	k() { kubectl --kubeconfig=/dev/null --server="${CP_URL}" --insecure-skip-tls-verify=true --token="${token}" "$@"; }
	request="$(openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "${STUB_DIR}/kubelet.key" \
		-subj "/O=system:nodes/CN=system:node:${NODE_NAME}" 2>/dev/null | base64 | tr -d '\n')"
	csr="$(k create -o jsonpath='{.metadata.name}' -f - <<EOF
{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"generateName":"node-csr-"},
 "spec":{"request":"${request}","signerName":"kubernetes.io/kube-apiserver-client-kubelet","usages":["digital signature","client auth"]}}
EOF
)"
	for ((i = 0; i < STUB_TLS_BOOTSTRAP_SECONDS; i++)); do
		if [[ -n "$(k get csr "${csr}" -o jsonpath='{.status.certificate}')" ]]; then
			printf '%s' "${token}" >"${STUB_DIR}/joined-token"
			# What the kubelet registers its Node with.
			cp "$3" "${STUB_DIR}/join-configuration.yaml"
			mkdir -p "${STUB_KUBERNETES_DIR}"
			echo kubeconfig >"${STUB_KUBERNETES_DIR}/kubelet.conf"
			exit 0
		fi
		sleep 1
	done
	echo "stub kubeadm: no certificate for CSR ${csr} after ${STUB_TLS_BOOTSTRAP_SECONDS}s" >&2
	echo "${csr}" >>"${STUB_DIR}/unsigned"
	exit 1
	;;
"reset --force") ;;
*) echo "stub kubeadm: unexpected call: $*" >&2; exit 64 ;;
esac
`,
	"gcloud": `#!/usr/bin/env bash
set -euo pipefail
if [[ -n "${STUB_LOG:-}" ]]; then printf 'gcloud %s\n' "$*" >>"${STUB_LOG}"; fi
unexpected() { echo "stub gcloud: unexpected call: gcloud ${call}" >&2; exit 64; }
call="$*"
# The calls of the day-0 steps before the first token (the APIs and the
# node images) keep their effects under STUB_STATE, which only the
# day-0 script test sets: the APIs enabled, the builder VMs, the images.
# flags NAME... reads --NAME=VALUE arguments, exactly those, into
# flag[NAME]; a NAME with a leading ? may be left out, one with a leading !
# is a switch (--NAME, no value; flag[NAME] is 1) and may be left out.
declare -A flag=()
flags() {
	local want=" $* " a k
	for a in "${args[@]}"; do
		if [[ "${a}" == --*=* ]]; then
			k="${a%%=*}" k="${k#--}"
			[[ "${want}" == *" ${k} "* || "${want}" == *" ?${k} "* ]] || unexpected
			[[ -z "${flag[${k}]+x}" ]] || unexpected
			flag["${k}"]="${a#*=}"
		else
			k="${a#--}"
			[[ "${a}" == --* && "${want}" == *" !${k} "* && -z "${flag[${k}]+x}" ]] || unexpected
			flag["${k}"]=1
		fi
	done
	for k in "$@"; do [[ "${k}" == [?!]* || -n "${flag[${k}]+x}" ]] || unexpected; done
}
instance() {
	[[ -d "${STUB_STATE}/instances/$1" ]] || { echo "ERROR: (gcloud) The resource 'projects/${flag[project]}/zones/${flag[zone]}/instances/$1' was not found" >&2; exit 1; }
}
case "$1 $2 $3" in
"services enable "*)
	[[ -n "${STUB_STATE:-}" ]] || unexpected
	shift 2
	apis=() args=()
	for a in "$@"; do if [[ "${a}" == --* ]]; then args+=("${a}"); else apis+=("${a}"); fi; done
	flags project
	((${#apis[@]})) || unexpected
	mkdir -p "${STUB_STATE}/apis/${flag[project]}"
	for a in "${apis[@]}"; do touch "${STUB_STATE}/apis/${flag[project]}/${a}"; done
	exit 0
	;;
"compute instances create" | "compute instances stop" | "compute instances delete" | "compute ssh "* | "compute images create")
	[[ -n "${STUB_STATE:-}" ]] || unexpected
	if [[ "$2" == ssh ]]; then name="$3" op=ssh; shift 3; else name="$4" op="$2 $3"; shift 4; fi
	args=()
	while (($#)) && [[ "$1" != -- ]]; do args+=("$1"); shift; done
	case "${op}" in
	"instances create") flags project zone image-project image-family boot-disk-size '?subnet' '!no-address' '?tags' ;;
	"images create") flags project family source-disk source-disk-zone ;;
	ssh) flags project zone '!tunnel-through-iap' ;;
	*) flags project zone ;;
	esac
	[[ -e "${STUB_STATE}/apis/${flag[project]}/compute.googleapis.com" ]] ||
		{ echo "ERROR: (gcloud) Compute Engine API has not been used in project ${flag[project]} before or it is disabled" >&2; exit 1; }
	case "${op}" in
	"instances create")
		(($# == 0)) || unexpected
		[[ ! -e "${STUB_STATE}/instances/${name}" ]] || { echo "ERROR: (gcloud) The resource '${name}' already exists" >&2; exit 1; }
		# The project has nothing in it: no default network, and, as an
		# organisation policy often says, no VM with an external IP.
		subnet="${flag[subnet]:-projects/${flag[project]}/regions/${flag[zone]%-*}/subnetworks/default}"
		[[ "${subnet}" =~ ^projects/([^/]+)/regions/([^/]+)/subnetworks/([^/]+)$ ]] || unexpected
		[[ -d "${STUB_STATE}/networks/${BASH_REMATCH[1]}/subnetwork/${BASH_REMATCH[3]}" && "${BASH_REMATCH[2]}" == "${flag[zone]%-*}" ]] ||
			{ echo "ERROR: (gcloud.compute.instances.create) Could not fetch resource: The resource '${subnet}' was not found" >&2; exit 1; }
		[[ -n "${flag[no-address]:-}" ]] ||
			{ echo "ERROR: (gcloud.compute.instances.create) Could not fetch resource: Constraint constraints/compute.vmExternalIpAccess violated for project ${flag[project]}." >&2; exit 1; }
		mkdir -p "${STUB_STATE}/instances/${name}"
		echo RUNNING >"${STUB_STATE}/instances/${name}/status"
		echo "${BASH_REMATCH[1]}" >"${STUB_STATE}/instances/${name}/network-project"
		tr ',' '\n' <<<"${flag[tags]:-}" >"${STUB_STATE}/instances/${name}/tags"
		;;
	ssh)
		# The builder VM runs the recipe it is given on stdin as root:
		# here it is kept, and bash reads it without running it.
		[[ "$*" == "-- sudo bash -s" ]] || unexpected
		instance "${name}"
		[[ "$(cat "${STUB_STATE}/instances/${name}/status")" == RUNNING ]] || { echo "ssh: connect to host ${name}: Connection refused" >&2; exit 255; }
		# Without an external IP, only through IAP's TCP forwarding: its
		# API enabled, and a firewall rule of the VM's network admitting
		# IAP's range to TCP 22 of one of the VM's tags.
		[[ -n "${flag[tunnel-through-iap]:-}" ]] || { echo "ssh: connect to host ${name}: Connection timed out (no external IP)" >&2; exit 255; }
		[[ -e "${STUB_STATE}/apis/${flag[project]}/iap.googleapis.com" ]] ||
			{ echo "ERROR: (gcloud.compute.start-iap-tunnel) Cloud Identity-Aware Proxy API has not been used in project ${flag[project]} before or it is disabled." >&2; exit 1; }
		admitted=""
		for rule in "${STUB_STATE}/firewalls/$(cat "${STUB_STATE}/instances/${name}/network-project")"/*; do
			[[ -e "${rule}" ]] && grep -qx 'range 35.235.240.0/20' "${rule}" && grep -qx 'allow tcp:22' "${rule}" || continue
			while read -r tag; do
				[[ -n "${tag}" ]] && grep -qxF "tag ${tag}" "${rule}" && admitted=1
			done <"${STUB_STATE}/instances/${name}/tags"
		done
		[[ -n "${admitted}" ]] || { echo "ERROR: (gcloud.compute.start-iap-tunnel) Error while connecting [4003: 'failed to connect to backend']." >&2; exit 1; }
		# The recipe installs packages: the VM reaches the repositories
		# through a Cloud NAT of its network's project.
		compgen -G "${STUB_STATE}/nats/$(cat "${STUB_STATE}/instances/${name}/network-project")/*" >/dev/null ||
			{ echo "stub gcloud: builder ${name} has no external IP and its network no Cloud NAT: the recipe reaches no package repository" >&2; exit 1; }
		cat >"${STUB_STATE}/instances/${name}/recipe.sh"
		bash -n "${STUB_STATE}/instances/${name}/recipe.sh"
		;;
	"instances stop")
		(($# == 0)) || unexpected
		instance "${name}"
		echo TERMINATED >"${STUB_STATE}/instances/${name}/status"
		;;
	"instances delete")
		(($# == 0)) || unexpected
		instance "${name}"
		rm -r "${STUB_STATE}/instances/${name}"
		;;
	"images create")
		(($# == 0)) || unexpected
		flag[zone]="${flag[source-disk-zone]}"
		instance "${flag[source-disk]}"
		disk="${STUB_STATE}/instances/${flag[source-disk]}"
		[[ "$(cat "${disk}/status")" == TERMINATED ]] ||
			{ echo "ERROR: (gcloud) The disk resource '${flag[source-disk]}' is already being used by '${flag[source-disk]}'" >&2; exit 1; }
		[[ -e "${disk}/recipe.sh" ]] || { echo "stub gcloud: an image of a builder that ran no recipe" >&2; exit 1; }
		mkdir -p "${STUB_STATE}/images/${flag[project]}/${flag[family]}"
		cp "${disk}/recipe.sh" "${STUB_STATE}/images/${flag[project]}/${flag[family]}/recipe.sh"
		echo "${name}" >>"${STUB_STATE}/images/${flag[project]}/${flag[family]}/images"
		;;
	esac
	exit 0
	;;
esac
if [[ "$1 $2 $3 $4" == "compute instance-groups managed list-instances" ]]; then
	[[ "$6" == --zone=* && "$7" == --project=* && "$8" == "--format=value(name)" && $# == 8 ]] || unexpected
	cat "${STUB_MIGS}/$5" 2>/dev/null || true
	exit 0
fi
if [[ "$1 $2 $3" == "compute project-info add-metadata" ]]; then
	# Sets project metadata key KEY to stdin: the test reads it from
	# STUB_METADATA/<project>/KEY.
	[[ "$4" == --project=* && "$5" =~ ^--metadata-from-file=([-A-Za-z0-9_]+)=/dev/stdin$ && $# == 5 && -n "${STUB_METADATA:-}" ]] || unexpected
	mkdir -p "${STUB_METADATA}/${4#--project=}"
	cat >"${STUB_METADATA}/${4#--project=}/${BASH_REMATCH[1]}"
	exit 0
fi
[[ "$1 $2 $3" == "secrets versions add" && "$5" == --project=* && "$6" == --data-file=- && $# == 6 ]] || unexpected
secret="$4" project="${5#--project=}"
# Under STUB_STATE, terraform apply creates the secret.
if [[ -n "${STUB_STATE:-}" && ! -e "${STUB_STATE}/secrets/${project}/${secret}" ]]; then
	echo "ERROR: (gcloud.secrets.versions.add) NOT_FOUND: Secret [projects/${project}/secrets/${secret}] not found or has no versions." >&2
	exit 1
fi
data="$(base64 | tr -d '\n')"
[[ -n "${data}" ]] || { echo "stub gcloud: empty stdin" >&2; exit 1; }
code="$(printf '{"payload":{"data":"%s"}}' "${data}" | curl --silent --max-time 10 \
	--header "Authorization: Bearer ${GCLOUD_ACCESS_TOKEN}" --header 'Content-Type: application/json' \
	--data-binary @- --output /dev/null --write-out '%{http_code}' \
	"${GCLOUD_SECRET_MANAGER_URL}/projects/${project}/secrets/${secret}:addVersion")"
[[ "${code}" == 200 ]] || { echo "stub gcloud: HTTP ${code}" >&2; exit 1; }
echo "Created version of the secret [${secret}]." >&2
`,
}

// TestDayZero plays day 0 from nothing as out/docs/day0.md tells it,
// against a real kube-apiserver configured as kubeadm's (Node,RBAC,
// NodeRestriction, bootstrap tokens, kubeadm's bindings) with
// kube-controller-manager signing and auto-approving CSRs, and fakes of
// the metadata server and Secret Manager on loopback, with the rendered
// join script and renewer run under bash:
//
//  1. terraform apply has made the secret, without a version; the
//     autoscaler's VM boots first and waits (Secret Manager answers 404);
//  2. the cloud join path is applied and the first token is added with
//     the docs' own command: a token of the cloud group only, so that a
//     CSR for a control-plane name made with it is not auto-approved;
//  3. the VM asks for its certificate with it, the person lists and
//     approves its request with the docs' commands, and the VM joins
//     within its deadline;
//  4. the renewer's first run adds its own token and leaves the first;
//  5. later, renewal has lapsed (every token expired) and the autoscaler's
//     VM is lost: its replacement cannot join, the docs' recovery command
//     adds a token, the VM's request is approved as on day 0, it joins
//     within its deadline, and the renewer's next run takes over and
//     retires the lapsed versions.
//
// No token the steps made is ever in kubeadm's auto-approved group.
func TestDayZero(t *testing.T) {
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
	src := l.Fleet.Clusters[0]
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(files[layout.Day0DocsPath])
	commands := markedCommands(t, doc, docs.Day0FirstTokenBegin, docs.Day0FirstTokenEnd)
	if len(commands) != 2 || commands[0] != commands[1] {
		t.Fatalf("%s: want the first-token command twice (day 0, and the way back), the same; got %q", layout.Day0DocsPath, commands)
	}
	list := markedCommands(t, doc, docs.Day0ListCSRsBegin, docs.Day0ListCSRsEnd)
	approve := markedCommands(t, doc, docs.Day0ApproveCSRBegin, docs.Day0ApproveCSREnd)
	if len(list) != 1 || len(approve) != 1 {
		t.Fatalf("%s: want the commands that list and approve node CSRs once each; got %q and %q", layout.Day0DocsPath, list, approve)
	}
	label := markedCommands(t, doc, docs.Day0LabelNodesBegin, docs.Day0LabelNodesEnd)
	if len(label) != 1 {
		t.Fatalf("%s: want the command that labels the autoscaler's nodes once; got %q", layout.Day0DocsPath, label)
	}
	ca := src.NodeGroups[src.Cluster.Autoscaler.NodeGroup]
	joinScript := files[layout.StartupScriptPath(ca.Name)]

	cp := testcp.StartWith(t, testcp.Options{Production: true})
	cp.StartControllerManager(t, testcp.CSRSigningController, testcp.CSRApprovingController)
	manifest := files[layout.JoinTokenRenewerPath]
	// The renewer's file (applied in a later step; nothing runs it
	// before), and the cloud join path, applied with the first token.
	for _, m := range [][]byte{manifest, files[layout.NodeCSRApproverPath]} {
		if _, _, err := kubectl(t, cp.Admin(), string(m), "create", "--validate=strict", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	}
	e := &renewerEnv{cp: cp, src: src, sa: cp.ServiceAccount(t, model.WorkloadNamespace, model.JoinTokenRenewer.Name())}
	e.renewal = src.Renewal()
	e.script, e.env = renewerScript(t, manifest)
	f := newFakeGCP(t, src.Cluster.GCP.Project, src.Cluster.JoinToken.SecretManager.Secret)

	migs := t.TempDir() // per MIG, the names of its VMs
	p := newDay0Person(t, cp, f, migs, "")
	path := p.path
	approveVM := func(t *testing.T, vm string) { p.approveVM(t, list[0], approve[0], vm) }
	person := p.run
	setMIG := func(vm string) {
		if err := os.WriteFile(filepath.Join(migs, src.Cluster.MIGName(ca, ca.Zones[0])), []byte(vm+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// 1. The secret has no version; the autoscaler's VM boots and waits.
	firstVM := src.Cluster.BaseInstanceName(ca) + "-b7x2"
	setMIG(firstVM)
	first := bootVM(t, f, joinScript, path, cp, firstVM, ca.Zones[0])
	eventually(t, 30*time.Second, "the VM asking Secret Manager again after 404s", func() string {
		if n := f.count("/versions/latest:access"); n < 3 {
			return fmt.Sprintf("%d requests for the latest version", n)
		}
		return ""
	})
	if len(f.snapshot()) != 0 {
		t.Fatal("the secret has a version before the first token")
	}
	// 2. The first token, as the docs say.
	person(t, commands[0])
	versions := f.snapshot()
	if len(versions) != 1 {
		t.Fatalf("%d versions after the first token, want 1", len(versions))
	}
	firstToken := strings.TrimSuffix(string(versions[0].Payload), "\n")
	e.notAutoApproved(t, "the first token", firstToken)
	e.acceptedSoon(t, "the first token", firstToken, model.CloudBootstrapGroup)
	// 3. The VM asks for its certificate with it; the person approves its
	// request, and it joins within its deadline.
	approveVM(t, firstVM)
	r := first.wait(t)
	r.joined(t, firstToken)
	if !strings.Contains(r.log, "HTTP 404: the secret has no version yet") {
		t.Errorf("the VM's log does not say why it waited:\n%s", r.log)
	}
	// Its kubelet registers its Node, which it cannot give the verified
	// group label; the person gives it with the docs' command.
	registerAndLabel(t, cp, person, label[0], ca, firstVM)

	// 4. The renewer's first run: a token of its own as the newest
	// version; the first stays enabled (superseded only now).
	if code, stderr := e.run(t, f); code != 0 {
		t.Fatalf("the renewer's first run: exit %d\n%s", code, stderr)
	}
	versions = f.snapshot()
	if len(versions) != 2 || versions[0].State != "ENABLED" || versions[1].State != "ENABLED" {
		t.Fatalf("after the renewer's first run: %v", states(versions))
	}
	e.acceptedSoon(t, "the renewer's token", string(versions[1].Payload), model.CloudBootstrapGroup)
	e.noKubeadmTokens(t)

	// 5. Renewal lapses for longer than the tokens live: they have
	// expired (the token cleaner deleted their Secrets), and the versions
	// are that old. Then the autoscaler's VM is lost.
	e.admin(t, "delete", "secrets", "-n", "kube-system", "--field-selector=type="+model.BootstrapTokenType, "--wait=true")
	f.shift(e.renewal.TTL + time.Hour)
	e.refused(t, "the lapsed token", string(versions[1].Payload))
	secondVM := src.Cluster.BaseInstanceName(ca) + "-q4m9"
	setMIG(secondVM)
	second := bootVM(t, f, joinScript, path, cp, secondVM, ca.Zones[0])
	eventually(t, 45*time.Second, "the replacement VM refused with the lapsed token", func() string {
		if b, _ := os.ReadFile(filepath.Join(second.stub, "refused")); len(b) == 0 {
			return "no refused join yet"
		}
		return ""
	})
	// The way back, as the docs say.
	person(t, commands[1])
	versions = f.snapshot()
	recovery := strings.TrimSuffix(string(versions[len(versions)-1].Payload), "\n")
	e.notAutoApproved(t, "the recovery token", recovery)
	e.acceptedSoon(t, "the recovery token", recovery, model.CloudBootstrapGroup)
	approveVM(t, secondVM)
	r = second.wait(t)
	r.joined(t, recovery)
	registerAndLabel(t, cp, person, label[0], ca, secondVM)
	if !strings.Contains(r.log, "the join token changed since the last attempt") {
		t.Errorf("the replacement VM's log does not say it took the new token:\n%s", r.log)
	}
	// The renewer, back on the new node, takes over: it retires the first
	// version (superseded long ago); the lapsed one was superseded only
	// by the recovery token, and it and the recovery token stay until
	// their grace ends.
	if code, stderr := e.run(t, f); code != 0 {
		t.Fatalf("the renewer after the recovery: exit %d\n%s", code, stderr)
	}
	versions = f.snapshot()
	want := []string{"DISABLED", "ENABLED", "ENABLED", "ENABLED"}
	if got := stateList(versions); !slices.Equal(got, want) {
		t.Errorf("versions after the renewer took over again: %v, want %v", got, want)
	}
	e.acceptedSoon(t, "the renewer's new token", string(versions[len(versions)-1].Payload), model.CloudBootstrapGroup)
	e.noKubeadmTokens(t)
}

// day0Host is the control-plane node the day-0 steps ssh to.
const day0Host = "cp-1.example.internal"

// day0Person runs the documented commands as the person does, in dir,
// with the stand-ins of day0Stubs first on PATH.
type day0Person struct {
	path string // PATH: the stand-ins, then the machine's
	bin  string // the stand-ins' folder
	dir  string // the working directory ("" for the test's)
	env  []string
	cp   *testcp.ControlPlane
}

// newDay0Person writes the stand-ins and returns the person: with
// CONTROL_PLANE_HOST set as the docs say, the admin's kubeconfig, and
// gcloud's credentials for the fake; migs holds, per MIG, its VMs.
func newDay0Person(t *testing.T, cp *testcp.ControlPlane, f *fakeGCP, migs, dir string) *day0Person {
	t.Helper()
	bin := t.TempDir()
	for name, body := range day0Stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	return &day0Person{path: path, bin: bin, dir: dir, cp: cp, env: []string{
		"PATH=" + path, "HOME=" + t.TempDir(), docs.Day0ControlPlaneHostVar + "=" + day0Host, "EXPECT_SSH_HOST=" + day0Host,
		"KUBECONFIG=" + cp.Admin().Kubeconfig, "STUB_MIGS=" + migs,
		"CP_ADMIN_KUBECONFIG=" + cp.Admin().Kubeconfig, "GCLOUD_ACCESS_TOKEN=" + f.accessToken, "GCLOUD_SECRET_MANAGER_URL=" + f.SecretManagerURL(),
		"STUB_METADATA=" + t.TempDir(),
	}}
}

// command is a documented command as the person runs it, under bash
// -euo pipefail, with env added; the person answers "yes" to a prompt.
func (p *day0Person) command(command string, env ...string) *exec.Cmd {
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", command)
	cmd.Dir = p.dir
	cmd.Env = append(slices.Clone(p.env), env...)
	cmd.Stdin = strings.NewReader("yes\n")
	return cmd
}

// run runs a documented command and returns its output; it fails the
// test if the command fails or shows a bootstrap token.
func (p *day0Person) run(t *testing.T, command string, env ...string) string {
	t.Helper()
	out, err := p.command(command, env...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	if tokenRE.Match(out) {
		t.Errorf("the command shows the token:\n%s", out)
	}
	return string(out)
}

// approveVM lists the VMs and the undecided requests with the docs'
// command list, until the one request for the VM's name of the cloud
// group shows, and approves it with the docs' command approve.
func (p *day0Person) approveVM(t *testing.T, list, approve, vm string) {
	t.Helper()
	subject := regexp.MustCompile(`CN ?= ?system:node:` + regexp.QuoteMeta(vm) + `(,|$)`)
	// Until the VM has filed its request the listing cannot show it: wait
	// for one with client-go (the person's listing, bash, gcloud, kubectl
	// and openssl, costs far more a try), then list as the person does.
	began := time.Now()
	eventually(t, 45*time.Second, "a pending request of VM "+vm+" on the server", func() string {
		list, err := clientOf(t, p.cp.Admin()).CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for _, c := range list.Items {
			if decision(&c) != nil || !slices.Contains(c.Spec.Groups, model.CloudBootstrapGroup) {
				continue
			}
			if block, _ := pem.Decode(c.Spec.Request); block != nil {
				if r, err := x509.ParseCertificateRequest(block.Bytes); err == nil && r.Subject.CommonName == "system:node:"+vm {
					return ""
				}
			}
		}
		return fmt.Sprintf("none among %d CSRs", len(list.Items))
	})
	var csr string
	eventually(t, 45*time.Second-time.Since(began), "the request of VM "+vm+" listed", func() string {
		out := p.run(t, list)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if !slices.Contains(lines, vm) {
			return "the VM is not listed:\n" + out
		}
		var found []string
		for _, l := range lines {
			fields := strings.Fields(l)
			if len(fields) >= 4 && strings.Contains(","+fields[2], ","+model.CloudBootstrapGroup+",") && subject.MatchString(l) {
				found = append(found, fields[0])
			}
		}
		if len(found) != 1 {
			return fmt.Sprintf("%d requests for %s of %s:\n%s", len(found), vm, model.CloudBootstrapGroup, out)
		}
		csr = found[0]
		return ""
	})
	p.run(t, approve, docs.Day0NodeCSRVar+"="+csr)
}

// registerAndLabel creates VM vm's Node of group g as its kubelet does
// (the join's group label, no verified label), checks that the kubelet
// may not add the verified group label, runs the docs' label command as
// the person, and checks that the Node then carries it.
func registerAndLabel(t *testing.T, cp *testcp.ControlPlane, person func(*testing.T, string, ...string) string, command string, g *model.NodeGroup, vm string) {
	t.Helper()
	kubelet := cp.Node(t, vm)
	node := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + vm + `","labels":{"` + model.GroupLabel + `":"` + g.Name + `"}}}`
	if _, stderr, err := kubectl(t, kubelet, node, "create", "-f", "-"); err != nil {
		t.Fatalf("the kubelet registering Node %s: %v %s", vm, err, stderr)
	}
	if _, stderr, err := kubectl(t, kubelet, "", "label", "node", vm, model.VerifiedGroupLabel+"="+g.Name); err == nil ||
		!strings.Contains(stderr, "is not allowed to modify labels: "+model.VerifiedGroupLabel) {
		t.Errorf("the kubelet labelling itself %s: %v %s; want NodeRestriction's refusal", model.VerifiedGroupLabel, err, stderr)
	}
	person(t, command)
	out, _, err := kubectl(t, cp.Admin(), "", "get", "node", vm, "-o", "jsonpath={.metadata.labels."+strings.ReplaceAll(model.VerifiedGroupLabel, ".", `\.`)+"}")
	if err != nil || out != g.Name {
		t.Errorf("after the docs' label command, Node %s has %s=%q (%v), want %s", vm, model.VerifiedGroupLabel, out, err, g.Name)
	}
}

// notAutoApproved fails the test if a CSR for a control-plane node's name
// made with token is decided by anyone within 5 s, while
// kube-controller-manager's csrapproving controller runs: a token of
// kubeadm's group gets it approved within a second.
func (e *renewerEnv) notAutoApproved(t *testing.T, what, token string) {
	t.Helper()
	u := e.cp.TokenUser(t, what, token)
	var csr string
	eventually(t, 10*time.Second, what+" accepted", func() string {
		usages := `["digital signature","client auth"]`
		body := `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"generateName":"node-csr-"},"spec":{"request":"` +
			base64.StdEncoding.EncodeToString(csrRequest(t, "cp-1")) + `","signerName":"` + model.KubeletClientSigner + `","usages":` + usages + `}}`
		out, _, err := kubectl(t, u, body, "create", "-f", "-", "-o", "jsonpath={.metadata.name}")
		if err != nil {
			return err.Error()
		}
		csr = strings.TrimSpace(out)
		return ""
	})
	time.Sleep(5 * time.Second)
	var c certificatesv1.CertificateSigningRequest
	if err := json.Unmarshal([]byte(e.admin(t, "get", "csr", csr, "-o", "json")), &c); err != nil {
		t.Fatal(err)
	}
	if d := decision(&c); d != nil {
		t.Fatalf("a CSR for system:node:cp-1 made with %s was %s (%s: %s), %d certificate bytes; want it left undecided",
			what, d.Type, d.Reason, d.Message, len(c.Status.Certificate))
	}
	e.admin(t, "delete", "csr", csr)
}

// noKubeadmTokens fails the test if a bootstrap token of kubeadm's
// auto-approved group exists.
func (e *renewerEnv) noKubeadmTokens(t *testing.T) {
	t.Helper()
	var list corev1.SecretList
	if err := json.Unmarshal([]byte(e.admin(t, "get", "secrets", "-n", "kube-system", "--field-selector=type="+model.BootstrapTokenType, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if groups := string(s.Data["auth-extra-groups"]); slices.Contains(strings.Split(groups, ","), kubeadmNodeGroup) {
			t.Errorf("bootstrap token %s is in %s (auth-extra-groups %q)", s.Name, kubeadmNodeGroup, groups)
		}
	}
}

// acceptedSoon fails the test unless token authenticates as a bootstrap
// user of its id in group within a few seconds (the bootstrap-token
// authenticator reads Secrets from an informer's cache, which sees a new
// one shortly after it was created).
func (e *renewerEnv) acceptedSoon(t *testing.T, what, token, group string) {
	t.Helper()
	id, _, _ := strings.Cut(token, ".")
	eventually(t, 10*time.Second, what+" accepted", func() string {
		u, code := e.whoami(t, token)
		if u == nil {
			return fmt.Sprintf("HTTP %d", code)
		}
		if u.Username != "system:bootstrap:"+id || !slices.Contains(u.Groups, group) {
			t.Fatalf("%s authenticates as %q in %v; want system:bootstrap:%s in %s", what, u.Username, u.Groups, id, group)
		}
		return ""
	})
}

// markedCommands returns the shell commands of docs between the markers
// begin and end.
func markedCommands(t *testing.T, docs, begin, end string) []string {
	t.Helper()
	var out []string
	for rest := docs; ; {
		_, after, ok := strings.Cut(rest, begin+"\n```sh\n")
		if !ok {
			return out
		}
		block, tail, ok := strings.Cut(after, "\n```\n"+end)
		if !ok {
			t.Fatalf("an unterminated %s block in %s", begin, layout.Day0DocsPath)
		}
		out = append(out, block)
		rest = tail
	}
}

// renewerScript writes the renewer's script from its manifest to a file
// and returns it with the CronJob container's environment.
func renewerScript(t *testing.T, manifest []byte) (string, []string) {
	t.Helper()
	objs, err := k8sdecode.Objects(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var script string
	var env []string
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			script = filepath.Join(t.TempDir(), "join-token-renewer.sh")
			if err := os.WriteFile(script, []byte(o.Data["join-token-renewer.sh"]), 0o755); err != nil {
				t.Fatal(err)
			}
		case *batchv1.CronJob:
			for _, v := range o.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env {
				if v.Name != "HOME" {
					env = append(env, v.Name+"="+v.Value)
				}
			}
		}
	}
	if script == "" || len(env) == 0 {
		t.Fatalf("no script or no CronJob in %s", layout.JoinTokenRenewerPath)
	}
	return script, env
}

func stateList(vs []smVersion) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.State
	}
	return out
}

// vm is a join script running at a VM's boot.
type vm struct {
	stub    string
	kubeDir string
	start   time.Time
	done    chan vmResult
}

type vmResult struct {
	code    int
	log     string
	elapsed time.Duration
	stub    string
	kubeDir string
}

// bootVM starts the join script as GCE does at a fresh VM's first boot,
// against the fakes (which now describe this VM) and the stub kubeadm:
// the script's endpoints are the fakes', its directories the VM's own,
// its deadline day0Deadline and its retry delays shortened to match.
func bootVM(t *testing.T, f *fakeGCP, script []byte, path string, cp *testcp.ControlPlane, instance, zone string) *vm {
	t.Helper()
	f.addVM(instance, zone)
	tmp := t.TempDir()
	v := &vm{stub: filepath.Join(tmp, "stub"), kubeDir: filepath.Join(tmp, "etc-kubernetes"), done: make(chan vmResult, 1)}
	if err := os.Mkdir(v.stub, 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := scripttest.WithConstants(script, map[string]string{
		"METADATA_URL": f.MetadataURLOf(instance), "SECRET_MANAGER_URL": f.SecretManagerURL(),
		"KUBERNETES_DIR": v.kubeDir, "KUBELET_DIR": filepath.Join(tmp, "var-lib-kubelet"), "STATE_DIR": filepath.Join(tmp, "var-lib-nodegen"),
		"JOIN_DEADLINE": strconv.Itoa(int(day0Deadline.Seconds())),
		"RETRY_DELAY":   "1", "MAX_RETRY_DELAY": "2", "HTTP_RETRY_DELAY": "1", "HTTP_MAX_RETRY_DELAY": "2",
	})
	if err != nil {
		t.Fatalf("the join script: %v", err)
	}
	scriptPath := filepath.Join(tmp, "startup-script.sh")
	if err := os.WriteFile(scriptPath, script, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", scriptPath)
	cmd.Env = []string{
		"PATH=" + path, "HOME=" + tmp, "STUB_DIR=" + v.stub, "CP_URL=" + cp.URL,
		"STUB_KUBERNETES_DIR=" + v.kubeDir, "NODE_NAME=" + instance, "STUB_TLS_BOOTSTRAP_SECONDS=60",
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	v.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		r := vmResult{log: out.String(), elapsed: time.Since(v.start), stub: v.stub, kubeDir: v.kubeDir}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			r.code = -1
			r.log += "\n" + err.Error()
		}
		v.done <- r
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	return v
}

// wait waits for the script to end, at most its deadline and a margin.
func (v *vm) wait(t *testing.T) vmResult {
	t.Helper()
	select {
	case r := <-v.done:
		return r
	case <-time.After(day0Deadline + 30*time.Second):
		t.Fatalf("the join script still runs %s after boot, past its deadline of %s", time.Since(v.start).Round(time.Second), day0Deadline)
		return vmResult{}
	}
}

// joined fails the test unless the VM joined with token within the
// join deadline, and never logged it.
func (r vmResult) joined(t *testing.T, token string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("the join script failed (exit %d) after %s:\n%s", r.code, r.elapsed.Round(time.Millisecond), r.log)
	}
	if r.elapsed >= day0Deadline {
		t.Errorf("the VM joined after %s, past its deadline of %s", r.elapsed.Round(time.Millisecond), day0Deadline)
	}
	got, _ := os.ReadFile(filepath.Join(r.stub, "joined-token"))
	if string(got) != token {
		t.Errorf("the VM joined with another token than the one added")
	}
	if _, err := os.Stat(filepath.Join(r.kubeDir, "kubelet.conf")); err != nil {
		t.Errorf("no kubelet.conf after the join: %v", err)
	}
	if strings.Contains(r.log, token) {
		t.Errorf("the join script logged the token")
	}
	t.Logf("joined after %s", r.elapsed.Round(time.Millisecond))
}

// TestDayZeroMetadataKey: with the join token in project metadata, which
// every VM of the project can read, the day-0 steps' first token (run as
// documented, through the stand-ins) is in the cloud join group only. A
// CSR made with it for a control-plane node's name stays undecided while
// the production control plane's csrapproving controller runs (kubeadm's
// auto-approval covers its default group only), as does the VM's own
// until the approver, or the admin with the documented command, decides
// it; a kubeadm default-group token's CSR is auto-approved meanwhile.
func TestDayZeroMetadataKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range renewerSource {
		if name == "cluster.cue" {
			old := "joinToken: {\n\t\tsecretManager: secret: \"join-token\"\n\t\tttl:        \"2h\"\n\t\trenewEvery: \"1h\"\n\t}"
			if !strings.Contains(content, old) {
				t.Fatal("the renewer's source has no Secret Manager join token to replace")
			}
			content = strings.Replace(content, old, `joinToken: metadataKey: "kubeadm-join-token"`, 1)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := pipeline.Load(dir)
	if err != nil {
		t.Fatalf("the test source: %v", err)
	}
	src := l.Fleet.Clusters[0]
	if src.Cluster.JoinToken.MetadataKey == "" || src.Cluster.HasJoinTokenRenewer() {
		t.Fatal("the test source does not keep its token in project metadata")
	}
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(files[layout.Day0DocsPath])
	commands := markedCommands(t, doc, docs.Day0FirstTokenBegin, docs.Day0FirstTokenEnd)
	approve := markedCommands(t, doc, docs.Day0ApproveCSRBegin, docs.Day0ApproveCSREnd)
	if len(commands) < 1 || len(approve) != 1 {
		t.Fatalf("%s: want the first-token command and the approve command; got %q and %q", layout.Day0DocsPath, commands, approve)
	}

	cp := testcp.StartWith(t, testcp.Options{Production: true})
	cp.StartControllerManager(t, testcp.CSRSigningController, testcp.CSRApprovingController)
	// The cloud join path, applied with the first token.
	if _, _, err := kubectl(t, cp.Admin(), string(files[layout.NodeCSRApproverPath]), "create", "--validate=strict", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	f := newFakeGCP(t, src.Cluster.GCP.Project, "unused")
	p := newDay0Person(t, cp, f, t.TempDir(), "")
	p.run(t, commands[0])
	var metadataDir string
	for _, e := range p.env {
		if v, ok := strings.CutPrefix(e, "STUB_METADATA="); ok {
			metadataDir = v
		}
	}
	b, err := os.ReadFile(filepath.Join(metadataDir, src.Cluster.GCP.Project, src.Cluster.JoinToken.MetadataKey))
	if err != nil {
		t.Fatalf("the first-token step set no project metadata key %s: %v", src.Cluster.JoinToken.MetadataKey, err)
	}
	token := strings.TrimSpace(string(b))
	holder := cp.TokenUser(t, "the project-metadata token", token)

	// What any VM of the project can do with it: a CSR for the
	// control-plane node's name, and one for a cloud VM's.
	attack := createCSR(t, holder, csrRequest(t, "cp-1"), model.KubeletClientSigner)
	vm := createCSR(t, holder, csrRequest(t, "renew-work-ab12"), model.KubeletClientSigner)
	// The control: a token in kubeadm's default group is auto-approved by
	// the same controller.
	e := &approverEnv{cp: cp, src: src, renewer: &renewerEnv{cp: cp, src: src}}
	control := createCSR(t, cp.TokenUser(t, "a kubeadm default-group token", e.bootstrapToken(t, "kadm03", kubeadmNodeGroup)),
		csrRequest(t, "onprem-gpu-3"), model.KubeletClientSigner)
	eventually(t, 30*time.Second, "the default-group token's CSR auto-approved", func() string {
		if d := decision(e.csr(t, control)); d == nil || d.Type != certificatesv1.CertificateApproved {
			return fmt.Sprintf("%+v", d)
		}
		return ""
	})
	time.Sleep(5 * time.Second) // the controller's further syncs
	for _, c := range []string{attack, vm} {
		got := e.csr(t, c)
		if d := decision(got); d != nil || len(got.Status.Certificate) > 0 {
			t.Errorf("CSR %s of the project-metadata token (groups %v) was decided without the approver: %+v", c, got.Spec.Groups, d)
		}
		if !slices.Contains(got.Spec.Groups, model.CloudBootstrapGroup) || slices.Contains(got.Spec.Groups, kubeadmNodeGroup) {
			t.Errorf("CSR %s: groups %v, want %s and not %s", c, got.Spec.Groups, model.CloudBootstrapGroup, kubeadmNodeGroup)
		}
	}
}
