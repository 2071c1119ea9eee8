#!/usr/bin/env bash
# Decides the kubelet client CSRs of VMs that join with the cloud join
# token, so that only a fresh VM of one of the cluster's MIGs gets a node
# certificate, and only for its own instance name.
#
# The cloud join token (the renewer's) is in the bootstrap group
# CLOUD_BOOTSTRAP_GROUP, which kubeadm's auto-approval does not cover: the
# csrapproving controller leaves these CSRs pending. Every POLL_SECONDS this
# script lists the CSRs and decides each pending one with signer
# kubernetes.io/kube-apiserver-client-kubelet requested by a bootstrap token
# of that group (it leaves every other CSR alone: on-prem joins with
# kubeadm's own tokens, kubelet renewals, other signers). It approves
# system:node:<name> only when all of these hold:
#   - the PEM request holds one CERTIFICATE REQUEST whose subject is exactly
#     one organization, system:nodes, and one common name,
#     system:node:<name>, with no attributes (so no extensions, no subject
#     alternative name), and the usages are those the signer accepts for
#     kubelet client certificates: what kube-controller-manager's signer
#     would refuse is denied here rather than approved and then failed
#     (kubernetes v1.37.2 pkg/apis/certificates/helpers.go
#     ValidateKubeletClientCSR, called by
#     pkg/controller/certificates/signer/signer.go isKubeletClient);
#   - <name> is <base>-<4 characters of [a-z0-9]> for the base instance name
#     of one of INSTANCE_GROUPS (a MIG's baseInstanceName);
#   - no CSR for <name> was approved since the instance was created;
#   - no Node <name> is Ready;
#   - the Compute API (with the VM service account's token from the
#     metadata server) has instance <name> in one of the group's zones,
#     RUNNING, created by that zone's MIG (metadata created-by) at most
#     max-age seconds ago, and it runs what the group's template holds
#     (runs_template below);
#   - the CSR's public key is the one the VM published: the instance's
#     guest attribute KEY_ATTRIBUTE (instances.getGuestAttributes) is
#     "<the instance's id> sha256:<SHA-256 of the CSR's SubjectPublicKeyInfo
#     DER>". Only the VM itself can write its guest attributes (through its
#     metadata server); the join script writes the hash of the key the
#     kubelet's TLS bootstrap signs with before kubeadm join starts it. So a
#     holder of the join token who asks for a VM's name, before or after the
#     VM, is denied and the VM approved; a recreated VM of the same name has
#     another id and publishes its own key. While the instance has
#     published nothing for its id, its CSRs stay pending.
# Work per pass is bounded: the CSRs are taken oldest first, at most
# PER_TOKEN pending CSRs of one bootstrap token id are read a pass (the
# others wait for a later pass; a CSR already decided is not counted);
# each instance is read from the Compute API once a pass, whatever the
# number of CSRs naming it; the approvals are written before the denials;
# reading CSRs takes at most half of PASS_SECONDS (the CSRs not read wait
# for the next pass), and writing stops at PASS_SECONDS after at least 10
# denials: the denials not written are written by the next pass without
# reading their CSRs again.
# Anything else is denied, with the reason in the CSR's Denied condition.
# When the Compute API cannot be read, the CSR stays pending and is tried
# again. Decisions go through the approval subresource with the CSR's
# resourceVersion, so a CSR that changed meanwhile is read again.
#
# runs_template: what a VM runs at boot comes from its metadata (the
# guest agent runs startup-script, cloud-init reads user-data, and so on).
# The instance's metadata, as instances.get returns it (the template's,
# with what the MIG's all-instances config and a per-instance config set
# over it), must hold exactly the keys of TEMPLATE_METADATA and the two
# the MIG writes (created-by, instance-template): a fixed value as
# rendered, and each rendered value (kube-env, startup-script) equal to
# the template's, in the instance template named by instance-template,
# itself one of the group's (named with the group's prefix, carrying its
# labels, with exactly the keys and fixed values of TEMPLATE_METADATA).
# The values are compared as the Compute API's JSON text, which one API
# writes alike for an instance and a template. A template is not read
# from the render: during a rollout the VMs of the previous template are
# the group's as much as the new ones. Templates are immutable, so each
# is read once. Further, the MIG's all-instances config
# (instanceGroupManagers.get, allInstancesConfig) sets no metadata, and
# the MIG holds no per-instance config for <name> that preserves state
# (metadata, disks, addresses): a config that only names the VM is what
# createInstances leaves (the Compute API reference,
# compute/docs/reference/rest/v1/instanceGroupManagers/createInstances:
# it "creates instances with per-instance configurations", each given as
# a name and an optional preservedState), and is no reason to refuse;
# nor does the MIG's stateful policy preserve disks or addresses (a VM
# it recreates would keep its old boot disk). The instance boots from
# the disk its MIG made with it (boot_disk), and the project's metadata
# sets no shutdown script, which the guest agent would run on the VM
# (project_config). The boot disk's image is not read: the disk is the
# one made from the template's image unless someone with rights neither
# of nodegen's accounts has (compute.disks.create, instances.attachDisk)
# put another in its place under its name.
#
# After each pass over the CSRs, it gives each Node whose name is an instance
# name of one of INSTANCE_GROUPS the label VERIFIED_LABEL=<group> once the
# Compute API showed its VM: the Node's providerID is
# gce://PROJECT/<zone>/<name> for one of the group's zones, and instance
# <name> there is RUNNING and was created by that zone's MIG. A kubelet
# cannot set that label on itself (NodeRestriction refuses every
# node-restriction.kubernetes.io/ label to a kubelet), so the placements and
# policies that select on it rest on this check, not on what a node says of
# itself. The same rule as for a CSR applies (runs_template), but for the
# age. A Node that fails the check is tried again after RECHECK_SECONDS.
# A labelled Node is checked again every RECHECK_SECONDS, and loses the
# label when its instance is no longer its MIG's as the template made it:
# its metadata differs from its template's, the MIG's all-instances
# config sets metadata or its stateful policy preserves state, another
# disk is its boot disk, the project's metadata sets a shutdown script,
# the MIG holds a per-instance config for it that preserves state (which the autoscaler's account, allowed to update the
# MIG, may add to a VM already approved and apply by restarting it), the
# instance was not created by that MIG, or the providerID names no
# instance of the group. A Node that lost the label so does not get it
# back while this process runs and its instance keeps its id, even if
# the instance's metadata is set back to the template's: the VM may have
# booted with the other. It keeps the label while
# the instance is gone or not RUNNING: the node garbage collector deletes
# only labelled Nodes, once they are NotReady and their VM is gone. The
# Nodes checked in one pass stop at PASS_SECONDS; the rest wait for the
# next pass.
# A Node carrying the label with another value than the group its name
# belongs to (a group renamed or removed, a mistake) loses it.
#
# Runs in the nodegen-node-csr-approver Deployment on the autoscaler's node,
# with kubectl (in-cluster ServiceAccount, or KUBECONFIG) and curl; in the
# pod it writes the decisions with curl (SA_DIR), one process each.
#
# Environment:
#   PROJECT                GCP project of the MIGs
#   CLOUD_BOOTSTRAP_GROUP  the cloud join token's bootstrap group
#   INSTANCE_GROUPS        one line per node group: "<base> <group> <max-age-seconds> <zone>..."
#   VERIFIED_LABEL         the label the checked Nodes get (node-restriction.kubernetes.io/...)
#   KEY_ATTRIBUTE          the guest attribute (namespace/key) holding a VM's kubelet key hash
#   TEMPLATES              one line per node group: "<base> <template name prefix> <label>=<value>..."
#   TEMPLATE_METADATA      the templates' metadata keys: "<key>=<fixed value>" or "<key>" (rendered)
set -euo pipefail

: "${PROJECT:?PROJECT is required}"
: "${CLOUD_BOOTSTRAP_GROUP:?CLOUD_BOOTSTRAP_GROUP is required}"
: "${INSTANCE_GROUPS:?INSTANCE_GROUPS is required}"
: "${VERIFIED_LABEL:?VERIFIED_LABEL is required}"
: "${KEY_ATTRIBUTE:?KEY_ATTRIBUTE is required}"
: "${TEMPLATES:?TEMPLATES is required}"
: "${TEMPLATE_METADATA:?TEMPLATE_METADATA is required}"
# Pending CSRs of one bootstrap token id decided a pass, oldest first.
readonly PER_TOKEN=64
# Seconds after which a pass stops deciding.
readonly PASS_SECONDS=20
# Seconds before a Node is checked again: one that failed the check, to be
# labelled, and one that carries the label, to lose it if its instance
# changed.
readonly RECHECK_SECONDS=60
# Seconds between passes: a CSR is decided within a few of them, far
# inside the join's TLS-bootstrap timeout.
readonly POLL_SECONDS=2
# 1: one pass, then exit (0, or 1 if something could not be read); 0: a
# pass every POLL_SECONDS, for ever.
readonly ONCE=0
# The pod's ServiceAccount token and the cluster CA: the decisions are
# written with curl and them (a kubectl process per decision is what a
# flood of CSRs costs); where the script runs outside a pod, with kubectl.
readonly SA_DIR=/var/run/secrets/kubernetes.io/serviceaccount
readonly METADATA_URL=http://169.254.169.254/computeMetadata/v1
readonly COMPUTE_URL=https://compute.googleapis.com/compute/v1
readonly SIGNER=kubernetes.io/kube-apiserver-client-kubelet
readonly NAME_RE='^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$'
readonly REASON_APPROVED=NodegenInstanceVerified
readonly REASON_DENIED=NodegenNotAFreshInstance
WORK="$(mktemp -d)"
readonly WORK
trap 'rm -rf "${WORK}"' EXIT

# The log's times are UTC; bash's printf writes them without a process.
export TZ=UTC
log() { printf '%(%Y-%m-%dT%H:%M:%SZ)T node-csr-approver: %s\n' -1 "$*"; }

# summary prints the last line of a command's error output.
summary() {
	local s="${1%$'\n'}"
	printf '%s' "${s##*$'\n'}"
}

# The API server's URL for the decisions, "" to write them with kubectl:
# in a pod, the kubelet sets KUBERNETES_SERVICE_HOST and _PORT in every
# container, as client-go's in-cluster configuration reads them.
API_URL=""
if [[ -n "${KUBERNETES_SERVICE_HOST:-}" && -n "${KUBERNETES_SERVICE_PORT:-}" && -r "${SA_DIR}/token" && -r "${SA_DIR}/ca.crt" ]]; then
	if [[ "${KUBERNETES_SERVICE_HOST}" == *:* ]]; then
		API_URL="https://[${KUBERNETES_SERVICE_HOST}]:${KUBERNETES_SERVICE_PORT}"
	else
		API_URL="https://${KUBERNETES_SERVICE_HOST}:${KUBERNETES_SERVICE_PORT}"
	fi
fi
readonly API_URL

# The node groups: base instance name -> group, -> max age, and -> zones.
declare -A GROUP=() MAX_AGE=() ZONES=()
while read -r base group age zones; do
	[[ -n "${base}" ]] || continue
	if [[ ! "${base}" =~ ${NAME_RE} || ! "${group}" =~ ${NAME_RE} || ! "${age}" =~ ^[0-9]+$ || -z "${zones}" ]]; then
		log "INSTANCE_GROUPS: bad line ${base@Q} ${group@Q} ${age@Q} ${zones@Q}"
		exit 2
	fi
	GROUP["${base}"]="${group}"
	MAX_AGE["${base}"]="${age}"
	ZONES["${base}"]="${zones}"
done <<<"${INSTANCE_GROUPS}"
# Each group's template name prefix and the labels its templates carry.
declare -A TEMPLATE_PREFIX=() TEMPLATE_LABELS=()
while read -r base prefix labels; do
	[[ -n "${base}" ]] || continue
	if [[ -z "${GROUP[${base}]+x}" || ! "${prefix}" =~ ^[a-z][-a-z0-9]*-$ || ! "${labels}" =~ ^[a-z][-_a-z0-9]*=[-_a-z0-9]*(\ [a-z][-_a-z0-9]*=[-_a-z0-9]*)*$ ]]; then
		log "TEMPLATES: bad line ${base@Q} ${prefix@Q} ${labels@Q}"
		exit 2
	fi
	TEMPLATE_PREFIX["${base}"]="${prefix}"
	TEMPLATE_LABELS["${base}"]="${labels}"
done <<<"${TEMPLATES}"
for base in "${!GROUP[@]}"; do
	[[ -n "${TEMPLATE_PREFIX[${base}]+x}" ]] || { log "TEMPLATES: no line for ${base}"; exit 2; }
done
# The templates' metadata: key -> the fixed value's JSON text, or "" for
# a rendered value (compared with the template's).
declare -A WANT_MD=()
for item in ${TEMPLATE_METADATA}; do
	if [[ ! "${item}" =~ ^([-A-Za-z0-9_]+)(=([A-Za-z0-9._-]+))?$ ]]; then
		log "TEMPLATE_METADATA: bad item ${item@Q}"
		exit 2
	fi
	WANT_MD["${BASH_REMATCH[1]}"]="${BASH_REMATCH[3]:+\"${BASH_REMATCH[3]}\"}"
done
# The keys a MIG writes on each of its instances.
readonly MIG_KEYS="created-by instance-template"
# When a Node that failed the label check may be checked again.
declare -A RECHECK_AT=()
# The Nodes that lost the label for what their instance runs: name ->
# instance id. They do not get it back while the instance keeps its id.
declare -A REVOKED=()

TOKEN=""
TOKEN_AT=0

# token sets TOKEN to the VM service account's access token, fetched again
# after 5 minutes (the metadata server hands out tokens valid for longer).
token() {
	((EPOCHSECONDS - TOKEN_AT < 300)) && [[ -n "${TOKEN}" ]] && return 0
	local body
	if ! body="$(curl -sS --fail --max-time 10 -H 'Metadata-Flavor: Google' \
		"${METADATA_URL}/instance/service-accounts/default/token" 2>"${WORK}/err")"; then
		log "cannot get an access token from the metadata server: $(summary "$(cat "${WORK}/err")")"
		return 1
	fi
	if [[ ! "${body}" =~ \"access_token\"[[:space:]]*:[[:space:]]*\"([^\"]+)\" ]]; then
		log "the metadata server's answer holds no access_token"
		return 1
	fi
	TOKEN="${BASH_REMATCH[1]}"
	TOKEN_AT="${EPOCHSECONDS}"
}

# instance_status prints the HTTP status of GET instance $2 in zone $1 and
# leaves the body, on one line, in WORK/instance. The token goes to curl on
# stdin, never on its command line.
instance_status() {
	local code
	code="$(printf 'header = "Authorization: Bearer %s"\n' "${TOKEN}" |
		curl -sS --max-time 10 -K - -o "${WORK}/body" -w '%{http_code}' \
			"${COMPUTE_URL}/projects/${PROJECT}/zones/$1/instances/$2" 2>"${WORK}/err")" || code="000"
	tr -d '\n' <"${WORK}/body" >"${WORK}/instance" 2>/dev/null || : >"${WORK}/instance"
	printf '%s' "${code}"
}

# field NAME prints the first string value of NAME in WORK/instance.
field() {
	grep -oE "\"$1\"[[:space:]]*:[[:space:]]*\"[^\"]*\"" "${WORK}/instance" | head -n 1 | sed -E 's/.*:[[:space:]]*"([^"]*)"$/\1/'
}

# rfc3339_epoch prints the Unix time of an RFC 3339 time with a Z or
# +hh:mm / -hh:mm offset and optional fraction (the Compute API writes
# 2026-12-01T03:04:05.678-08:00).
rfc3339_epoch() {
	local re='^([0-9]{4}-[0-9]{2}-[0-9]{2})T([0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]+)?(Z|([+-])([0-9]{2}):([0-9]{2}))$'
	[[ "$1" =~ ${re} ]] || return 1
	local t off=0
	t="$(date -u -d "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}" +%s)" || return 1
	if [[ "${BASH_REMATCH[4]}" != Z ]]; then
		off=$((10#${BASH_REMATCH[6]} * 3600 + 10#${BASH_REMATCH[7]} * 60))
		[[ "${BASH_REMATCH[5]}" == - ]] && off=$((-off))
	fi
	printf '%s' $((t - off))
}

# B64 is the value of each base64 character.
declare -A B64=()
for ((i = 0; i < 64; i++)); do
	c='ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
	B64["${c:i:1}"]=${i}
done
unset c i

# b64_hex TEXT sets H to the bytes (two hex digits each) the standard
# base64 TEXT encodes, padding only at its end, in bash (no process). It
# fails on any other character, a length not a multiple of 4, or
# misplaced padding.
b64_hex() {
	local s="$1" n=${#1} i a b c d v hex=""
	H=()
	((n % 4 == 0)) || return 1
	for ((i = 0; i < n; i += 4)); do
		a="${B64[${s:i:1}]-}" b="${B64[${s:i+1:1}]-}" c="${s:i+2:1}" d="${s:i+3:1}"
		[[ -n "${a}" && -n "${b}" ]] || return 1
		if [[ "${d}" == = ]]; then
			((i + 4 == n)) || return 1
			if [[ "${c}" == = ]]; then
				printf -v v '%02x' $(((a << 2) | (b >> 4)))
				hex+="${v} "
				break
			fi
			c="${B64[${c}]-}"
			[[ -n "${c}" ]] || return 1
			printf -v v '%02x %02x' $(((a << 2) | (b >> 4))) $((((b & 15) << 4) | (c >> 2)))
			hex+="${v} "
			break
		fi
		c="${B64[${c}]-}" d="${B64[${d}]-}"
		[[ -n "${c}" && -n "${d}" ]] || return 1
		v=$(((a << 18) | (b << 12) | (c << 6) | d))
		printf -v v '%02x %02x %02x' $((v >> 16)) $(((v >> 8) & 255)) $((v & 255))
		hex+="${v} "
	done
	read -ra H <<<"${hex}"
}

# der_at P reads the DER header at byte P of H (the request's bytes as hex):
# DER_TAG, DER_HDR (header length) and DER_LEN (content length). It fails
# on a header or content that runs past the end.
der_at() {
	local p=$1 b n i
	((p + 2 <= ${#H[@]})) || return 1
	DER_TAG="${H[p]}"
	b=$((16#${H[p + 1]}))
	if ((b < 128)); then
		DER_HDR=2 DER_LEN=$b
	else
		n=$((b & 127))
		((n >= 1 && n <= 2 && p + 2 + n <= ${#H[@]})) || return 1
		DER_LEN=0
		for ((i = 0; i < n; i++)); do DER_LEN=$((DER_LEN * 256 + 16#${H[p + 2 + i]})); done
		DER_HDR=$((2 + n))
	fi
	((p + DER_HDR + DER_LEN <= ${#H[@]}))
}

# der_text P sets DER_TEXT to the value at byte P of H (DER_* read): a
# UTF8String or PrintableString of printable ASCII, or fails.
der_text() {
	local j c
	DER_TEXT=""
	[[ "${DER_TAG}" == 0c || "${DER_TAG}" == 13 ]] && ((DER_LEN < 128)) || return 1
	for ((j = $1 + DER_HDR; j < $1 + DER_HDR + DER_LEN; j++)); do
		((16#${H[j]} >= 32 && 16#${H[j]} < 127)) || return 1
		# shellcheck disable=SC2059 # the format is \xHH of a checked hex byte
		printf -v c "\\x${H[j]}"
		DER_TEXT+="${c}"
	done
}

# read_csr REQUEST reads the base64 PEM CSR REQUEST as the signer will:
# CSR_CN is its common name and CSR_KEY the SHA-256 (hex) of its
# SubjectPublicKeyInfo DER. It fails, with the reason in CSR_PROBLEM,
# unless the PEM is one CERTIFICATE REQUEST block without headers whose
# DER is a CertificationRequest (RFC 2986) whose subject is exactly one
# organization system:nodes and one common name, in any order, and which
# has no attributes: the kubelet's TLS bootstrap makes such a CSR (the
# subject alone, no extensions), and the signer refuses any other
# organization and every subject alternative name.
read_csr() {
	local pem body nl=$'\n' begin="-----BEGIN CERTIFICATE REQUEST-----" end="-----END CERTIFICATE REQUEST-----"
	CSR_CN="" CSR_KEY="" CSR_SPKI="" CSR_PROBLEM="not one PEM certificate request"
	# Decoded in bash: two processes a CSR were most of a flood's cost.
	b64_hex "$1" && ((${#H[@]} > 0)) || return 1
	local fmt text="${H[*]}"
	# Printable ASCII and newlines only: a PEM is text (each byte is two
	# hex digits, so "0a" is a whole byte).
	text=" ${text//0a/20} "
	[[ "${text}" != *" "[0189a-f][0-9a-f]" "* && "${text}" != *" 7f "* ]] || return 1
	printf -v fmt '\\x%s' "${H[@]}"
	# shellcheck disable=SC2059 # the format is \xHH of checked hex bytes
	printf -v pem "${fmt}"
	# One BEGIN and one END line, each a line of its own, in that order.
	[[ "${pem}" != *"-----BEGIN "*"-----BEGIN "* && "${pem}" != *"-----END "*"-----END "* ]] || return 1
	[[ "${nl}${pem}${nl}" == *"${nl}${begin}${nl}"*"${nl}${end}${nl}"* ]] || return 1
	body="${pem#*"${begin}${nl}"}"
	body="${body%%"${nl}${end}"*}"
	[[ -n "${body}" && "${body}" != *[!A-Za-z0-9+/=$'\n']* ]] || return 1
	b64_hex "${body//$'\n'/}" || return 1
	CSR_PROBLEM="not a DER certificate request"
	local p info_end subject_end set_end atv_end oid cns=0 orgs=0 org="" spki spki_len
	der_at 0 && [[ "${DER_TAG}" == 30 ]] && ((DER_HDR + DER_LEN == ${#H[@]})) || return 1
	p=${DER_HDR}
	der_at "${p}" && [[ "${DER_TAG}" == 30 ]] || return 1 # CertificationRequestInfo
	info_end=$((p + DER_HDR + DER_LEN)) p=$((p + DER_HDR))
	der_at "${p}" && [[ "${DER_TAG}" == 02 ]] || return 1 # version
	p=$((p + DER_HDR + DER_LEN))
	der_at "${p}" && [[ "${DER_TAG}" == 30 ]] || return 1 # subject
	subject_end=$((p + DER_HDR + DER_LEN)) p=$((p + DER_HDR))
	while ((p < subject_end)); do
		der_at "${p}" && [[ "${DER_TAG}" == 31 ]] || return 1 # RelativeDistinguishedName
		set_end=$((p + DER_HDR + DER_LEN)) p=$((p + DER_HDR))
		while ((p < set_end)); do
			der_at "${p}" && [[ "${DER_TAG}" == 30 ]] || return 1 # AttributeTypeAndValue
			atv_end=$((p + DER_HDR + DER_LEN)) p=$((p + DER_HDR))
			der_at "${p}" && [[ "${DER_TAG}" == 06 ]] || return 1
			oid="${H[*]:p+DER_HDR:DER_LEN}" p=$((p + DER_HDR + DER_LEN))
			der_at "${p}" || return 1
			case "${oid}" in
			"55 04 03")
				der_text "${p}" || { CSR_PROBLEM="its common name is not a short printable string"; return 1; }
				CSR_CN="${DER_TEXT}"
				cns=$((cns + 1))
				;;
			"55 04 0a")
				der_text "${p}" || { CSR_PROBLEM="its organization is not a short printable string"; return 1; }
				org="${DER_TEXT}"
				orgs=$((orgs + 1))
				;;
			*)
				CSR_PROBLEM="its subject has an attribute other than the organization and the common name"
				return 1
				;;
			esac
			p=$((p + DER_HDR + DER_LEN))
			((p == atv_end)) || return 1
		done
		((p == set_end)) || return 1
	done
	((p == subject_end)) || return 1
	der_at "${p}" && [[ "${DER_TAG}" == 30 ]] || return 1 # SubjectPublicKeyInfo
	spki=${p} spki_len=$((DER_HDR + DER_LEN)) p=$((p + DER_HDR + DER_LEN))
	der_at "${p}" && [[ "${DER_TAG}" == a0 ]] || return 1 # attributes
	if ((DER_LEN != 0)); then
		CSR_PROBLEM="it has attributes (extensions such as a subject alternative name, which the signer refuses); a kubelet's CSR has none"
		return 1
	fi
	((p + DER_HDR == info_end)) || return 1
	if ((cns != 1 || orgs != 1)) || [[ "${org}" != system:nodes ]]; then
		CSR_PROBLEM="its subject is not exactly the organization system:nodes and one common name (${orgs} organizations, ${cns} common names), which the signer requires"
		return 1
	fi
	CSR_SPKI="${spki} ${spki_len}"
}

# csr_key sets CSR_KEY to the SHA-256 (hex) of the SubjectPublicKeyInfo
# DER of the CSR read_csr read last (computed only for a CSR whose
# instance published a key: one process less for every other CSR).
csr_key() {
	local at="${CSR_SPKI% *}" len="${CSR_SPKI#* }" fmt
	printf -v fmt '\\x%s' "${H[@]:at:len}"
	# shellcheck disable=SC2059 # the format is \xHH of hex bytes
	CSR_KEY="$(printf "${fmt}" | sha256sum)"
	CSR_KEY="${CSR_KEY%% *}"
	[[ "${CSR_KEY}" =~ ^[0-9a-f]{64}$ ]]
}

# usages_ok USAGES succeeds when the JSON array of key usages USAGES is
# one of the two sets the signer accepts for a kubelet client certificate:
# digital signature and client auth, with or without key encipherment.
usages_ok() {
	local -a u
	local i sign=0 client=0 key=0
	[[ "$1" =~ ^\[(\"[a-z ]+\"(,\"[a-z ]+\")*)\]$ ]] || return 1
	IFS=, read -ra u <<<"${BASH_REMATCH[1]}"
	for i in "${u[@]}"; do
		case "${i}" in
		'"digital signature"') sign=$((sign + 1)) ;;
		'"client auth"') client=$((client + 1)) ;;
		'"key encipherment"') key=$((key + 1)) ;;
		*) return 1 ;;
		esac
	done
	((sign == 1 && client == 1 && key <= 1))
}

# decide NAME RESOURCE_VERSION TYPE REASON MESSAGE writes the Approved or
# Denied condition through the approval subresource (a PUT with the
# resourceVersion: a CSR changed meanwhile answers 409 and is read again).
decide() {
	local out msg LC_ALL=C
	# The message is made of names checked against patterns and of values
	# the Compute API returned: keep JSON-safe characters only (bytes, in
	# the C locale).
	msg="${5//[^A-Za-z0-9 ._:\/,()<>=+-]/}"
	printf '{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"%s","resourceVersion":"%s"},"status":{"conditions":[{"type":"%s","status":"True","reason":"%s","message":"%s"}]}}' \
		"$1" "$2" "$3" "$4" "${msg}" >"${WORK}/decision.json"
	if [[ -n "${API_URL}" ]]; then
		# The token on curl's stdin, read again each time (the kubelet
		# rotates a projected token).
		out="$(printf 'header = "Authorization: Bearer %s"\n' "$(<"${SA_DIR}/token")" |
			curl -sS --max-time 20 --cacert "${SA_DIR}/ca.crt" -K - -X PUT -H 'Content-Type: application/json' \
				--data-binary "@${WORK}/decision.json" -o "${WORK}/answer" -w '%{http_code}' \
				"${API_URL}/apis/certificates.k8s.io/v1/certificatesigningrequests/$1/approval" 2>"${WORK}/err")" || out="000"
		if [[ "${out}" != 200 ]]; then
			log "CSR $1: writing ${3} failed (read again next pass): HTTP ${out} $(summary "$(head -c 300 "${WORK}/answer" 2>/dev/null; cat "${WORK}/err")")"
			return 1
		fi
	elif ! out="$(kubectl replace --raw "/apis/certificates.k8s.io/v1/certificatesigningrequests/$1/approval" \
		-f "${WORK}/decision.json" --request-timeout=20s 2>&1 >/dev/null)"; then
		log "CSR $1: writing ${3} failed (read again next pass): $(summary "${out}")"
		return 1
	fi
	log "CSR $1: ${3}: ${msg}"
}

deny() { decide "$1" "$2" Denied "${REASON_DENIED}" "$3"; }

# group_of NAME prints the base instance name NAME is an instance of.
group_of() {
	base_of "$1" && printf '%s' "${BASE}"
}

# base_of NAME sets BASE to the base instance name NAME is an instance of
# (group_of without a subshell).
base_of() {
	local b
	BASE=""
	for b in "${!MAX_AGE[@]}"; do
		if [[ "$1" =~ ^${b}-[a-z0-9]{4}$ ]]; then
			BASE="${b}"
			return 0
		fi
	done
	return 1
}

# JSON_STR matches a JSON string; OBJ1 to OBJ4 a JSON object whose
# members nest at most 1 to 4 deep (the shapes the Compute API answers).
readonly JSON_STR='"([^"\\]|\\.)*"'
readonly OBJ1='\{([^{}"]|'"${JSON_STR}"')*\}'
readonly OBJ2='\{([^{}"]|'"${JSON_STR}"'|'"${OBJ1}"')*\}'
readonly OBJ3='\{([^{}"]|'"${JSON_STR}"'|'"${OBJ2}"')*\}'
readonly OBJ4='\{([^{}"]|'"${JSON_STR}"'|'"${OBJ3}"')*\}'
# The value of an instance's or a template's metadata, or of a project's
# commonInstanceMetadata: strings, and items, an array of objects of
# strings.
readonly METADATA_RE='\{([^][{}"]|'"${JSON_STR}"'|\[([^][{}"]|'"${OBJ1}"')*\])*\}'

# get URL FILE prints the HTTP status of GET URL (the Compute API, with
# the token on curl's stdin) and leaves the body, on one line, in FILE.
get() {
	local code
	code="$(printf 'header = "Authorization: Bearer %s"\n' "${TOKEN}" |
		curl -sS --max-time 10 -K - -o "${WORK}/body" -w '%{http_code}' "$1" 2>"${WORK}/err")" || code="000"
	tr -d '\n' <"${WORK}/body" >"$2" 2>/dev/null || : >"$2"
	[[ "${code}" != 401 ]] || TOKEN=""
	printf '%s' "${code}"
}

# read_metadata FILE [FIELD] sets MD (key -> the value's JSON text) to
# the metadata items of the instance or template in FILE (FIELD
# metadata), or of the project (FIELD commonInstanceMetadata). It fails,
# with the reason in MD_WHY, on an item that is not a key and a string
# value, or a key given twice.
declare -A MD=()
read_metadata() {
	local line k field="${2:-metadata}"
	MD=()
	grep -oE "\"${field}\"[[:space:]]*:[[:space:]]*${METADATA_RE}" "$1" | head -n 1 | sed -E 's/^"[A-Za-z]+"[[:space:]]*:[[:space:]]*\{//' | grep -oE "${OBJ1}" |
		sed -E 's/^\{[[:space:]]*"key"[[:space:]]*:[[:space:]]*"([-A-Za-z0-9_]+)"[[:space:]]*,[[:space:]]*"value"[[:space:]]*:[[:space:]]*('"${JSON_STR}"')[[:space:]]*\}$/\1 \2/' >"${WORK}/items" || :
	while IFS= read -r line; do
		k="${line%% *}"
		if [[ "${line}" != *" "* || ! "${k}" =~ ^[-A-Za-z0-9_]+$ ]]; then
			MD_WHY="a metadata item is not a key and a string value"
			return 1
		fi
		if [[ -n "${MD[${k}]+x}" ]]; then
			MD_WHY="metadata key ${k} appears twice"
			return 1
		fi
		MD["${k}"]="${line#* }"
	done <"${WORK}/items"
}

# The instance templates read so far (they are immutable): name -> the
# base instance name of the group it was proved to be of, or "-" and why
# it is not; "name key" -> a rendered value's JSON text.
declare -A TEMPLATE_OF=() TEMPLATE_MD=() TEMPLATE_LABEL_TEXT=()

# group_template NAME BASE succeeds when instance template NAME is one
# of the group's: named with its prefix, carrying its labels, its
# metadata exactly TEMPLATE_METADATA's keys, with the fixed values. It
# reads the template once, leaving MD (the instance's metadata) as it
# is. Status 1 (the reason in MD_WHY): it is not;
# 2: it could not be read; 3: it no longer exists.
group_template() {
	local name="$1" base="$2" code k l
	# The template's metadata in a map of its own: MD holds the instance's,
	# which runs_template compares with the template's after this.
	local -A MD=()
	if [[ -z "${TEMPLATE_OF[${name}]+x}" ]]; then
		# Bounded: a template of each revision is read once.
		if ((${#TEMPLATE_OF[@]} >= 64)); then TEMPLATE_OF=() TEMPLATE_MD=() TEMPLATE_LABEL_TEXT=(); fi
		code="$(get "${COMPUTE_URL}/projects/${PROJECT}/global/instanceTemplates/${name}" "${WORK}/template")"
		case "${code}" in
		200) ;;
		404)
			# Terraform deletes a group's previous template once the MIGs
			# use the next: the VMs made from it are still the group's.
			MD_WHY="instance template ${name} no longer exists"
			return 3
			;;
		*)
			MD_WHY="the Compute API answered ${code} for instance template ${name}"
			return 2
			;;
		esac
		if [[ -z "${TEMPLATE_OF[${name}]+x}" ]]; then
			TEMPLATE_OF["${name}"]="${base}"
			# Its labels maps (the VMs' first of all).
			TEMPLATE_LABEL_TEXT["${name}"]="$(grep -oE '"labels"[[:space:]]*:[[:space:]]*'"${OBJ1}" "${WORK}/template" || :)"
			if ! read_metadata "${WORK}/template"; then
				TEMPLATE_OF["${name}"]="-instance template ${name}: ${MD_WHY}"
			fi
			for k in "${!MD[@]}"; do
				if [[ -z "${WANT_MD[${k}]+x}" ]]; then
					TEMPLATE_OF["${name}"]="-instance template ${name} sets metadata ${k}, which the group templates do not"
				elif [[ -n "${WANT_MD[${k}]}" && "${MD[${k}]}" != "${WANT_MD[${k}]}" ]]; then
					TEMPLATE_OF["${name}"]="-instance template ${name} sets metadata ${k} to another value than the group templates"
				fi
				[[ -n "${WANT_MD[${k}]-}" ]] || TEMPLATE_MD["${name} ${k}"]="${MD[${k}]}"
			done
			for k in "${!WANT_MD[@]}"; do
				[[ -n "${MD[${k}]+x}" ]] || TEMPLATE_OF["${name}"]="-instance template ${name} lacks metadata ${k}"
			done
		fi
	fi
	case "${TEMPLATE_OF[${name}]}" in
	-*)
		MD_WHY="${TEMPLATE_OF[${name}]#-}"
		return 1
		;;
	esac
	if [[ "${name}" != "${TEMPLATE_PREFIX[${base}]}"* ]]; then
		MD_WHY="instance template ${name} is not named ${TEMPLATE_PREFIX[${base}]}<suffix> as the group templates are"
		return 1
	fi
	for l in ${TEMPLATE_LABELS[${base}]}; do
		if [[ ! "${TEMPLATE_LABEL_TEXT[${name}]-}" =~ \"${l%%=*}\"[[:space:]]*:[[:space:]]*\"${l#*=}\" ]]; then
			MD_WHY="instance template ${name} does not carry the group label ${l}"
			return 1
		fi
	done
}

# mig_config ZONE MIG reads MIG ZONE/MIG, its all-instances config and its
# per-instance configs once a pass (MIG_READ), and succeeds when the
# all-instances config sets no metadata. Status 1 (the reason in MD_WHY):
# it does; 2: the MIG could not be read. The per-instance configs are
# left in WORK/pic-ZONE-MIG, one per line.
declare -A MIG_READ=()
mig_config() {
	local key="$1/$2" code url page="" n aic sp
	if [[ -z "${MIG_READ[${key}]+x}" ]]; then
		MIG_READ["${key}"]="2the MIG $1/$2 could not be read"
		code="$(get "${COMPUTE_URL}/projects/${PROJECT}/zones/$1/instanceGroupManagers/$2" "${WORK}/mig")"
		if [[ "${code}" != 200 ]]; then
			log "the Compute API answered ${code} for MIG $1/$2 ($(summary "$(head -c 300 "${WORK}/mig"; cat "${WORK}/err")"))"
			MD_WHY="${MIG_READ[${key}]#?}"
			return 2
		fi
		MIG_READ["${key}"]="0"
		if grep -q '"allInstancesConfig"' "${WORK}/mig"; then
			aic="$(grep -oE '"allInstancesConfig"[[:space:]]*:[[:space:]]*'"${OBJ3}" "${WORK}/mig" | head -n 1)"
			if [[ -z "${aic}" ]]; then
				MIG_READ["${key}"]="2the all-instances config of MIG $1/$2 could not be read"
			elif grep -qE '"metadata"[[:space:]]*:[[:space:]]*\{[[:space:]]*"' <<<"${aic}"; then
				MIG_READ["${key}"]="1the all-instances config of MIG $1/$2 sets metadata over the template"
			fi
		fi
		# A stateful policy that preserves disks or addresses: a VM the MIG
		# recreates (autohealing, an update) keeps them, its boot disk
		# included, instead of a new one made from the template.
		if [[ "${MIG_READ[${key}]}" == 0 ]] && grep -q '"statefulPolicy"' "${WORK}/mig"; then
			sp="$(grep -oE '"statefulPolicy"[[:space:]]*:[[:space:]]*'"${OBJ4}" "${WORK}/mig" | head -n 1)"
			if [[ -z "${sp}" ]]; then
				MIG_READ["${key}"]="2the stateful policy of MIG $1/$2 could not be read"
			else
				# Empty maps preserve nothing: removed, innermost first (one
				# sed, again while it removes one), the policy of a MIG that
				# preserves nothing is left empty.
				sp="$(sed -E 's/[[:space:],]//g; :a; s/"[A-Za-z]+":\{\}//g; ta' <<<"${sp}")"
				[[ -z "${sp}" ]] || MIG_READ["${key}"]="1the stateful policy of MIG $1/$2 preserves disks or addresses across recreation"
			fi
		fi
		# The per-instance configs: a POST with an empty body, in pages of
		# at most 500 items, each named after its instance; it needs
		# compute.instanceGroupManagers.get on the MIG.
		: >"${WORK}/pic-$1-$2"
		for ((n = 0; n < 20; n++)); do
			url="${COMPUTE_URL}/projects/${PROJECT}/zones/$1/instanceGroupManagers/$2/listPerInstanceConfigs"
			[[ -z "${page}" ]] || url+="?pageToken=${page}"
			code="$(printf 'header = "Authorization: Bearer %s"\n' "${TOKEN}" |
				curl -sS --max-time 10 -K - -X POST -d '' -o "${WORK}/body" -w '%{http_code}' "${url}" 2>"${WORK}/err")" || code="000"
			tr -d '\n' <"${WORK}/body" >"${WORK}/configs" 2>/dev/null || : >"${WORK}/configs"
			if [[ "${code}" != 200 ]]; then
				log "the Compute API answered ${code} for the per-instance configs of MIG $1/$2 ($(summary "$(head -c 300 "${WORK}/configs"; cat "${WORK}/err")"))"
				[[ "${code}" != 401 ]] || TOKEN=""
				MIG_READ["${key}"]="2the per-instance configs of MIG $1/$2 could not be read"
				break
			fi
			# Each item, without the list's own braces.
			sed -E 's/^[[:space:]]*\{//' "${WORK}/configs" | grep -oE "${OBJ4}" >>"${WORK}/pic-$1-$2" || :
			page="$(grep -oE '"nextPageToken"[[:space:]]*:[[:space:]]*"[^"]*"' "${WORK}/configs" | head -n 1 | sed -E 's/.*:[[:space:]]*"([^"]*)"$/\1/')"
			[[ -n "${page}" ]] || break
			if [[ ! "${page}" =~ ^[A-Za-z0-9_=-]+$ ]]; then
				log "the per-instance configs of MIG $1/$2: a nextPageToken of unexpected characters"
				MIG_READ["${key}"]="2the per-instance configs of MIG $1/$2 could not be read"
				break
			fi
		done
		if ((n == 20)); then
			log "the per-instance configs of MIG $1/$2: more than ${n} pages"
			MIG_READ["${key}"]="2the per-instance configs of MIG $1/$2 could not be read"
		fi
	fi
	MD_WHY="${MIG_READ[${key}]#?}"
	return "${MIG_READ[${key}]:0:1}"
}

# preserves_state ZONE MIG NAME succeeds when MIG ZONE/MIG (mig_config
# read) holds a per-instance config for instance NAME that preserves
# state: metadata (such as a startup-script), disks or addresses that
# the MIG applies to that one VM, which nodegen never sets. A config
# that only names the VM (createInstances leaves one) does not. Any
# config naming the instance counts, even by a "name" deeper inside: a
# false match refuses a VM, never admits one.
preserves_state() {
	local item ps
	while IFS= read -r item; do
		[[ "${item}" =~ \"name\"[[:space:]]*:[[:space:]]*\"$3\" ]] || continue
		ps="$(grep -oE '"preservedState"[[:space:]]*:[[:space:]]*'"${OBJ3}" <<<"${item}" | head -n 1)" || :
		if [[ -z "${ps}" ]]; then
			# No preservedState, or one deeper than the API's.
			[[ "${item}" != *'"preservedState"'* ]] || return 0
			continue
		fi
		# Empty maps (metadata, disks, ...) preserve nothing.
		ps="$(sed -E 's/"[A-Za-z]+"[[:space:]]*:[[:space:]]*\{[[:space:]]*\}//g; s/[[:space:],]//g' <<<"${ps}")"
		[[ "${ps}" == '"preservedState":{}' ]] || return 0
	done <"${WORK}/pic-$1-$2"
	return 1
}

# The project metadata keys of scripts a VM would run although the
# group's templates set none: the guest agent takes a VM's shutdown
# scripts, as its startup scripts, from its instance metadata, and, only
# when that sets none of them (with a value), from the project's
# (GoogleCloudPlatform/guest-agent 20260724.00,
# google_metadata_script_runner/main.go: getWantedKeys, getExistingKeys).
# The templates set startup-script, so a project's startup scripts never
# run on the groups' VMs; they set no shutdown script. cloud-init takes
# user-data from the instance's metadata only (canonical/cloud-init 26.2,
# cloudinit/sources/DataSourceGCE.py, read_md).
readonly PROJECT_SCRIPT_KEYS="shutdown-script shutdown-script-url"

# project_config reads the project's metadata (projects.get,
# commonInstanceMetadata) once a pass (PROJECT_READ), and succeeds when
# it sets none of PROJECT_SCRIPT_KEYS with a value. Status 1 (the reason
# in MD_WHY): it does, and every VM of the project would run that script
# as root when it stops, is preempted or deleted; 2: the project could
# not be read.
PROJECT_READ=""
project_config() {
	local code k
	local -A MD=()
	if [[ -z "${PROJECT_READ}" ]]; then
		PROJECT_READ="2the metadata of project ${PROJECT} could not be read"
		code="$(get "${COMPUTE_URL}/projects/${PROJECT}" "${WORK}/project")"
		if [[ "${code}" != 200 ]]; then
			log "the Compute API answered ${code} for project ${PROJECT} ($(summary "$(head -c 300 "${WORK}/project"; cat "${WORK}/err")"))"
		elif ! read_metadata "${WORK}/project" commonInstanceMetadata; then
			log "the metadata of project ${PROJECT}: ${MD_WHY}"
		else
			PROJECT_READ="0"
			for k in ${PROJECT_SCRIPT_KEYS}; do
				if [[ -n "${MD[${k}]+x}" && "${MD[${k}]}" != '""' ]]; then
					PROJECT_READ="1the metadata of project ${PROJECT} sets ${k}, which the guest agent runs as root on every VM whose own metadata sets no shutdown script, as the group templates do not"
					break
				fi
			done
		fi
	fi
	MD_WHY="${PROJECT_READ#?}"
	return "${PROJECT_READ:0:1}"
}

# boot_disk ZONE NAME succeeds when instance ZONE/NAME, in WORK/instance,
# has one boot disk and it is disk NAME of the project in ZONE: the disk
# the MIG made with it from its template, which names no disk (the
# Compute API reference, AttachedDiskInitializeParams diskName: "If not
# specified, the default is to use the name of the instance"). A disk
# attached as its boot disk since (instances.detachDisk and attachDisk,
# on a stopped VM) is another. Status 1 (the reason in VERDICT): it is
# not.
boot_disk() {
	local zone="$1" name="$2" disks item n=0 disk=""
	local re="^https://(www|compute)[.]googleapis[.]com/compute/v1/projects/${PROJECT}/zones/${zone}/disks/${name}$"
	disks="$(grep -oE '"disks"[[:space:]]*:[[:space:]]*\[([^][{}"]|'"${JSON_STR}"'|'"${OBJ4}"')*\]' "${WORK}/instance" | head -n 1 | sed -E 's/^"disks"[[:space:]]*:[[:space:]]*\[//')" || :
	while IFS= read -r item; do
		[[ "${item}" =~ \"boot\"[[:space:]]*:[[:space:]]*true ]] || continue
		n=$((n + 1))
		disk=""
		[[ ! "${item}" =~ \"source\"[[:space:]]*:[[:space:]]*\"([^\"]*)\" ]] || disk="${BASH_REMATCH[1]}"
	done < <(grep -oE "${OBJ4}" <<<"${disks}" || :)
	if ((n != 1)); then
		VERDICT="instance ${zone}/${name} has ${n} boot disks, not one"
		return 1
	fi
	if [[ ! "${disk}" =~ ${re} ]]; then
		VERDICT="the boot disk of instance ${zone}/${name} is ${disk:-no disk}, not disk ${name}, which its MIG made with it"
		return 1
	fi
}

# runs_template ZONE NAME BASE succeeds when instance ZONE/NAME, in
# WORK/instance, runs what its group's template holds: the rule in the
# header. Status 1 (the reason in VERDICT): it does not; 2: something
# could not be read; 3: its instance template no longer exists, which
# proves nothing either way.
runs_template() {
	local zone="$1" name="$2" base="$3" mig="$3-$1" k template rc
	if ! read_metadata "${WORK}/instance"; then
		VERDICT="instance ${zone}/${name}: ${MD_WHY}"
		return 1
	fi
	for k in "${!MD[@]}"; do
		if [[ -z "${WANT_MD[${k}]+x}" && " ${MIG_KEYS} " != *" ${k} "* ]]; then
			VERDICT="instance ${zone}/${name} has metadata ${k}, which the group template does not set"
			return 1
		fi
	done
	for k in "${!WANT_MD[@]}" ${MIG_KEYS}; do
		if [[ -z "${MD[${k}]+x}" ]]; then
			VERDICT="instance ${zone}/${name} lacks metadata ${k}, which the group template sets"
			return 1
		fi
		if [[ -n "${WANT_MD[${k}]-}" && "${MD[${k}]}" != "${WANT_MD[${k}]}" ]]; then
			VERDICT="instance ${zone}/${name} has metadata ${k} other than the group template"
			return 1
		fi
	done
	if [[ ! "${MD["instance-template"]}" =~ ^\"projects/[a-z0-9-]+/global/instanceTemplates/([a-z]([-a-z0-9]*[a-z0-9])?)\"$ ]]; then
		VERDICT="instance ${zone}/${name} has an instance-template metadata that names no global instance template"
		return 1
	fi
	template="${BASH_REMATCH[1]}"
	rc=0
	group_template "${template}" "${base}" || rc=$?
	if ((rc != 0)); then
		VERDICT="instance ${zone}/${name}: ${MD_WHY}"
		return "${rc}"
	fi
	for k in "${!WANT_MD[@]}"; do
		if [[ -z "${WANT_MD[${k}]}" && "${MD[${k}]}" != "${TEMPLATE_MD["${template} ${k}"]-}" ]]; then
			VERDICT="instance ${zone}/${name} has metadata ${k} other than that of its instance template ${template}"
			return 1
		fi
	done
	rc=0
	mig_config "${zone}" "${mig}" || rc=$?
	if ((rc != 0)); then
		VERDICT="${MD_WHY}"
		return "${rc}"
	fi
	if preserves_state "${zone}" "${mig}" "${name}"; then
		VERDICT="MIG ${mig} holds a per-instance config for ${name} that preserves state (metadata, disks or addresses): its VM may not run the group template as is"
		return 1
	fi
	boot_disk "${zone}" "${name}" || return 1
	rc=0
	project_config || rc=$?
	if ((rc != 0)); then
		VERDICT="${MD_WHY}"
		return "${rc}"
	fi
	VERDICT=""
}

# guest_key ZONE NAME sets GUEST to the value of the guest attribute
# KEY_ATTRIBUTE of instance ZONE/NAME (instances.getGuestAttributes with
# variableKey, whose answer holds variableValue); "" when the instance has
# not written it (404). Status 1 when the Compute API could not be read.
guest_key() {
	local code
	GUEST=""
	code="$(printf 'header = "Authorization: Bearer %s"\n' "${TOKEN}" |
		curl -sS --max-time 10 -K - -o "${WORK}/body" -w '%{http_code}' \
			"${COMPUTE_URL}/projects/${PROJECT}/zones/$1/instances/$2/getGuestAttributes?variableKey=${KEY_ATTRIBUTE}" 2>"${WORK}/err")" || code="000"
	tr -d '\n' <"${WORK}/body" >"${WORK}/guest" 2>/dev/null || : >"${WORK}/guest"
	case "${code}" in
	200)
		GUEST="$(grep -oE '"variableValue"[[:space:]]*:[[:space:]]*"[^"]*"' "${WORK}/guest" | head -n 1 | sed -E 's/.*:[[:space:]]*"([^"]*)"$/\1/')"
		;;
	404) ;;
	*)
		log "the Compute API answered ${code} for the guest attributes of instance $1/$2 ($(summary "$(head -c 300 "${WORK}/guest"; cat "${WORK}/err")"))"
		[[ "${code}" != 401 ]] || TOKEN=""
		return 1
		;;
	esac
}

# inspect NAME BASE reads instance NAME of the group with base instance
# name BASE from the Compute API, once a pass, and sets SEEN[NAME] to
# "ok", "deny" or "pending" and WHY[NAME] to the reason; for "ok" also
# ZONE_OF, CREATED_AT (Unix time), AGE and PUBLISHED (the key hash the
# instance published for its own id, "" if none yet).
declare -A SEEN=() WHY=() ZONE_OF=() CREATED_AT=() AGE=() PUBLISHED=()
# The denials a pass decided but had no time left to write: CSR name ->
# resourceVersion and reason.
declare -A UNWRITTEN=()
# The common name of each approved CSR, by CSR name ("" if unreadable),
# and when it was made (Unix time).
declare -A APPROVED_CN=() APPROVED_AT=()
inspect() {
	local name="$1" base="$2" zone code status created by when age rt id
	[[ -z "${SEEN[${name}]+x}" ]] || return 0
	SEEN["${name}"]=pending
	local -a zones
	read -ra zones <<<"${ZONES[${base}]}"
	if ! token; then
		WHY["${name}"]="no access token"
		return 0
	fi
	for zone in "${zones[@]}"; do
		code="$(instance_status "${zone}" "${name}")"
		case "${code}" in
		404) continue ;;
		200) ;;
		*)
			WHY["${name}"]="the Compute API answered ${code} for instance ${zone}/${name} ($(summary "$(head -c 300 "${WORK}/instance"; cat "${WORK}/err")"))"
			[[ "${code}" != 401 ]] || TOKEN=""
			return 0
			;;
		esac
		status="$(field status)"
		created="$(field creationTimestamp)"
		id="$(field id)"
		by="$(created_by)"
		if [[ "$(field name)" != "${name}" ]]; then
			WHY["${name}"]="the Compute API's instance ${zone}/${name} names another instance"
			return 0
		fi
		SEEN["${name}"]=deny
		if [[ "${status}" != RUNNING ]]; then
			WHY["${name}"]="instance ${zone}/${name} is ${status:-of no status}, not RUNNING"
			return 0
		fi
		if [[ "${by}" != */zones/"${zone}/instanceGroupManagers/${base}-${zone}" ]]; then
			WHY["${name}"]="instance ${zone}/${name} was not created by MIG ${base}-${zone} (created-by: ${by:-none})"
			return 0
		fi
		SEEN["${name}"]=pending
		if ! when="$(rfc3339_epoch "${created}")" || [[ ! "${id}" =~ ^[0-9]{1,20}$ ]]; then
			WHY["${name}"]="unreadable creationTimestamp ${created@Q} or id ${id@Q} of instance ${zone}/${name}"
			return 0
		fi
		age=$((EPOCHSECONDS - when))
		if ((age > MAX_AGE[${base}])); then
			SEEN["${name}"]=deny
			WHY["${name}"]="instance ${zone}/${name} was created ${age}s ago, more than ${MAX_AGE[${base}]}s: not a fresh VM"
			return 0
		fi
		rt=0
		runs_template "${zone}" "${name}" "${base}" || rt=$?
		WHY["${name}"]="${VERDICT}"
		if ((rt == 1 || rt == 3)); then
			SEEN["${name}"]=deny
			return 0
		fi
		((rt == 0)) || return 0
		if ! guest_key "${zone}" "${name}"; then
			WHY["${name}"]="the guest attributes of instance ${zone}/${name} could not be read"
			return 0
		fi
		PUBLISHED["${name}"]=""
		if [[ "${GUEST}" =~ ^([0-9]{1,20})\ sha256:([0-9a-f]{64})$ && "${BASH_REMATCH[1]}" == "${id}" ]]; then
			PUBLISHED["${name}"]="${BASH_REMATCH[2]}"
		fi
		SEEN["${name}"]=ok ZONE_OF["${name}"]="${zone}" CREATED_AT["${name}"]="${when}" AGE["${name}"]="${age}"
		WHY["${name}"]="instance ${zone}/${name} (id ${id}) has published no kubelet key for its id yet"
		return 0
	done
	SEEN["${name}"]=deny
	WHY["${name}"]="no instance ${name} in zones ${ZONES[${base}]} of project ${PROJECT}"
}

# list_nodes lists the Nodes in WORK/nodes, one a line: name, providerID,
# VERIFIED_LABEL's value and the Ready condition's status, each followed
# by \x1f; NODES_LISTED=1 tells label_nodes it need not list them again.
NODES_LISTED=0
list_nodes() {
	local fmt='{range .items[*]}{.metadata.name}{"\x1f"}{.spec.providerID}{"\x1f"}{.metadata.labels.'"${VERIFIED_LABEL//./\\.}"'}{"\x1f"}{.status.conditions[?(@.type=="Ready")].status}{"\x1f"}{"\n"}{end}'
	NODES_LISTED=0
	kubectl get nodes --request-timeout=20s -o "jsonpath=${fmt}" >"${WORK}/nodes" 2>"${WORK}/err" || return 1
	NODES_LISTED=1
}

# pass decides the pending CSRs of the cloud join token, oldest first, at
# most PER_TOKEN of each bootstrap token id, within PASS_SECONDS: the
# approvals first, then the denials.
pass() {
	local sep=$'\x1f' rc=0 line started="${EPOCHSECONDS}"
	local fmt='{range .items[*]}{.metadata.name}{"\x1f"}{.metadata.resourceVersion}{"\x1f"}{.spec.signerName}{"\x1f"}{.spec.username}{"\x1f"}{.spec.groups}{"\x1f"}{.status.conditions[*].type}{"\x1f"}{.spec.request}{"\x1f"}{.spec.usages}{"\x1f"}{.metadata.creationTimestamp}{"\x1f"}{"\n"}{end}'
	if ! kubectl get csr --request-timeout=20s --sort-by=.metadata.creationTimestamp -o "jsonpath=${fmt}" >"${WORK}/csrs" 2>"${WORK}/err"; then
		log "cannot list the CSRs: $(summary "$(cat "${WORK}/err")")"
		return 1
	fi
	# The Nodes, for label_nodes too (one list a pass).
	if ! list_nodes; then
		log "cannot list the nodes: $(summary "$(cat "${WORK}/err")")"
		return 1
	fi
	local -A ready=() issued=() per_token=() listed=()
	local -a n
	while IFS="${sep}" read -ra n; do
		((${#n[@]} < 4)) || ready["${n[0]}"]="${n[3]}"
	done <"${WORK}/nodes"
	SEEN=() WHY=() ZONE_OF=() CREATED_AT=() AGE=() PUBLISHED=() MIG_READ=() PROJECT_READ=""

	# First: the approved CSRs' names (and when each was made), and the
	# pending ones to decide, oldest first, at most PER_TOKEN a token id.
	local -a f pending=() approve=() deny=()
	local created cn
	while IFS= read -r line; do
		[[ -n "${line}" ]] || continue
		IFS="${sep}" read -ra f <<<"${line}"
		((${#f[@]} == 9)) || continue
		[[ "${f[2]}" == "${SIGNER}" && "${f[4]}" == *"\"${CLOUD_BOOTSTRAP_GROUP}\""* ]] || continue
		if [[ -n "${f[5]}" ]]; then
			[[ "${f[5]}" == *Approved* ]] || continue
			if [[ -z "${APPROVED_CN[${f[0]}]+x}" ]]; then
				# Read once: an approved CSR does not change.
				APPROVED_CN["${f[0]}"]=""
				! read_csr "${f[6]}" || APPROVED_CN["${f[0]}"]="${CSR_CN}"
				APPROVED_AT["${f[0]}"]="$(rfc3339_epoch "${f[8]}")" || APPROVED_AT["${f[0]}"]=0
			fi
			listed["${f[0]}"]=1
			cn="${APPROVED_CN[${f[0]}]}"
			[[ -n "${cn}" ]] || continue
			created="${APPROVED_AT[${f[0]}]}"
			# The newest approval of a name counts.
			((created < ${issued["${cn}"]-0})) || issued["${cn}"]="${created}"
			continue
		fi
		if [[ "${UNWRITTEN[${f[0]}]-}" == "${f[1]}${sep}"* ]]; then
			# Denied in an earlier pass that ran out of time: not read again.
			deny+=("${f[0]}${sep}${UNWRITTEN[${f[0]}]}")
			continue
		fi
		per_token["${f[3]}"]=$((${per_token["${f[3]}"]:-0} + 1))
		((per_token["${f[3]}"] <= PER_TOKEN)) || continue
		pending+=("${line}")
	done <"${WORK}/csrs"
	for name in "${!APPROVED_CN[@]}"; do
		[[ -n "${listed[${name}]+x}" ]] || unset 'APPROVED_CN[${name}]' 'APPROVED_AT[${name}]'
	done
	for name in "${!per_token[@]}"; do
		((per_token["${name}"] <= PER_TOKEN)) ||
			log "${name} has ${per_token["${name}"]} pending CSRs: the oldest ${PER_TOKEN} are read this pass"
	done

	# Then each pending CSR's decision, without writing any yet.
	local -A granted=()
	local csr rv base reading="${EPOCHSECONDS}"
	for line in "${pending[@]}"; do
		# Reading takes at most half the pass (listing the CSRs and Nodes
		# aside): the rest is for writing.
		if ((2 * (EPOCHSECONDS - reading) >= PASS_SECONDS)); then
			log "reading CSRs took half of the pass's ${PASS_SECONDS}s: the CSRs left wait for the next pass"
			break
		fi
		IFS="${sep}" read -ra f <<<"${line}"
		csr="${f[0]}" rv="${f[1]}"
		if [[ "${f[3]}" != system:bootstrap:* ]]; then
			deny+=("${csr}${sep}${rv}${sep}requested by ${f[3]}, not by a bootstrap token")
			continue
		fi
		if ! read_csr "${f[6]}"; then
			deny+=("${csr}${sep}${rv}${sep}${CSR_PROBLEM}")
			continue
		fi
		cn="${CSR_CN}"
		if [[ "${cn}" != system:node:* ]]; then
			deny+=("${csr}${sep}${rv}${sep}its common name is not system:node:<name>")
			continue
		fi
		if ! usages_ok "${f[7]}"; then
			deny+=("${csr}${sep}${rv}${sep}usages ${f[7]} are not digital signature and client auth (and key encipherment), which the signer requires")
			continue
		fi
		name="${cn#system:node:}"
		if [[ ! "${name}" =~ ${NAME_RE} ]] || ! base_of "${name}"; then
			deny+=("${csr}${sep}${rv}${sep}${name} is not the name of an instance of any nodegen MIG of this cluster")
			continue
		fi
		base="${BASE}"
		if [[ "${ready[${name}]-}" == True ]]; then
			deny+=("${csr}${sep}${rv}${sep}a Ready Node ${name} exists")
			continue
		fi
		inspect "${name}" "${base}"
		case "${SEEN[${name}]}" in
		deny)
			deny+=("${csr}${sep}${rv}${sep}${WHY[${name}]}")
			continue
			;;
		pending)
			log "CSR ${csr}: ${WHY[${name}]}; left pending"
			rc=1
			continue
			;;
		esac
		if [[ -n "${issued[${cn}]+x}" ]] && ((issued[${cn}] >= CREATED_AT[${name}])); then
			deny+=("${csr}${sep}${rv}${sep}a CSR for ${name} was already approved since instance ${ZONE_OF[${name}]}/${name} was created")
			continue
		fi
		if [[ -z "${PUBLISHED[${name}]}" ]]; then
			log "CSR ${csr}: ${WHY[${name}]}; left pending"
			continue
		fi
		if ! csr_key; then
			deny+=("${csr}${sep}${rv}${sep}its public key could not be hashed")
			continue
		fi
		if [[ "${CSR_KEY}" != "${PUBLISHED[${name}]}" ]]; then
			deny+=("${csr}${sep}${rv}${sep}its key sha256:${CSR_KEY} is not the kubelet key sha256:${PUBLISHED[${name}]} that instance ${ZONE_OF[${name}]}/${name} published")
			continue
		fi
		if [[ -n "${granted[${name}]+x}" ]]; then
			continue # the same key asked twice: one approval; the next pass denies the other
		fi
		granted["${name}"]=1
		approve+=("${csr}${sep}${rv}${sep}instance projects/${PROJECT}/zones/${ZONE_OF[${name}]}/instances/${name} is RUNNING, created ${AGE[${name}]}s ago by MIG ${base}-${ZONE_OF[${name}]}, runs its template, and published the CSR's key sha256:${CSR_KEY}")
	done

	local d i
	for d in "${approve[@]}"; do
		IFS="${sep}" read -ra f <<<"${d}"
		decide "${f[0]}" "${f[1]}" Approved "${REASON_APPROVED}" "${f[2]}" || rc=1
	done
	UNWRITTEN=()
	for i in "${!deny[@]}"; do
		IFS="${sep}" read -ra f <<<"${deny[i]}"
		# At least 10 denials a pass, however long it took.
		if ((i >= 10 && EPOCHSECONDS - started >= PASS_SECONDS)); then
			# Kept for the next pass, which writes them without reading
			# these CSRs again or counting them against PER_TOKEN.
			UNWRITTEN["${f[0]}"]="${f[1]}${sep}${f[2]}"
			continue
		fi
		deny "${f[0]}" "${f[1]}" "${f[2]}" || rc=1
	done
	((${#UNWRITTEN[@]} == 0)) || log "the pass took ${PASS_SECONDS}s: ${#UNWRITTEN[@]} denials left for the next one"
	return "${rc}"
}

# created_by prints the created-by metadata value of the instance in
# WORK/instance.
created_by() {
	grep -oE '"key"[[:space:]]*:[[:space:]]*"created-by"[[:space:]]*,[[:space:]]*"value"[[:space:]]*:[[:space:]]*"[^"]*"' "${WORK}/instance" | head -n 1 | sed -E 's/.*"([^"]*)"$/\1/'
}

# verify_node NAME BASE PROVIDER_ID succeeds when Node NAME is instance NAME
# of MIG BASE-<zone>: its providerID names one of the group's zones, and
# the Compute API has the instance there, RUNNING, created by that MIG,
# running what the group's template holds (runs_template); VERIFIED_ID
# is the instance's id. Status 1: it is not that MIG's instance as the
# template made it (another providerID, another creator, other metadata,
# an all-instances config, a per-instance config or a stateful policy
# that preserves state, another boot disk, a project shutdown script);
# 2: the Compute API could not be read; 3: no such instance, or it is
# not RUNNING.
verify_node() {
	local name="$1" base="$2" pid="$3" zone="" z code by status
	VERIFIED_ID=""
	local -a zones
	read -ra zones <<<"${ZONES[${base}]}"
	for z in "${zones[@]}"; do
		[[ "${pid}" != "gce://${PROJECT}/${z}/${name}" ]] || zone="${z}"
	done
	if [[ -z "${zone}" ]]; then
		VERDICT="providerID ${pid:-none} is not gce://${PROJECT}/<one of ${ZONES[${base}]}>/${name}"
		return 1
	fi
	token || { VERDICT="no access token"; return 2; }
	code="$(instance_status "${zone}" "${name}")"
	if [[ "${code}" != 200 ]]; then
		VERDICT="the Compute API answered ${code} for instance ${zone}/${name}"
		[[ "${code}" != 401 ]] || TOKEN=""
		[[ "${code}" == 404 ]] && return 3
		return 2
	fi
	by="$(created_by)" status="$(field status)"
	if [[ "$(field name)" != "${name}" || "${by}" != */zones/"${zone}/instanceGroupManagers/${base}-${zone}" ]]; then
		VERDICT="instance ${zone}/${name} was created by ${by:-none}, not by MIG ${base}-${zone}"
		return 1
	fi
	if [[ "${status}" != RUNNING ]]; then
		VERDICT="instance ${zone}/${name} is ${status:-of no status}, not RUNNING"
		return 3
	fi
	VERIFIED_ID="$(field id)"
	runs_template "${zone}" "${name}" "${base}"
}

# label_nodes gives VERIFIED_LABEL to every Node verify_node proves an
# instance of a group's MIG, takes it from every labelled Node it proves
# is not (checked again every RECHECK_SECONDS), and from every Node whose
# name is not an instance name of the group it names.
label_nodes() {
	local sep=$'\x1f' rc=0 line name pid have want base out v started="${EPOCHSECONDS}" left=0
	if [[ "${NODES_LISTED}" != 1 ]] && ! list_nodes; then
		log "cannot list the nodes: $(summary "$(cat "${WORK}/err")")"
		return 1
	fi
	NODES_LISTED=0
	local -a f
	while IFS= read -r line; do
		[[ -n "${line}" ]] || continue
		IFS="${sep}" read -ra f <<<"${line}"
		name="${f[0]}" pid="${f[1]-}" have="${f[2]-}" want="" base=""
		if [[ "${name}" =~ ${NAME_RE} ]] && base="$(group_of "${name}")"; then
			want="${GROUP[${base}]}"
		fi
		if [[ -n "${have}" && "${have}" != "${want}" ]]; then
			if out="$(kubectl label node "${name}" "${VERIFIED_LABEL}-" --request-timeout=20s 2>&1 >/dev/null)"; then
				log "node ${name}: removed ${VERIFIED_LABEL}=${have}: its name is an instance name of ${want:-no group}"
			else
				log "node ${name}: removing ${VERIFIED_LABEL} failed: $(summary "${out}")"
				rc=1
			fi
			continue
		fi
		[[ -n "${want}" ]] || continue
		((EPOCHSECONDS >= ${RECHECK_AT["${name}"]:-0})) || continue
		if ((EPOCHSECONDS - started >= PASS_SECONDS)); then
			left=$((left + 1))
			continue
		fi
		v=0
		verify_node "${name}" "${base}" "${pid}" || v=$?
		RECHECK_AT["${name}"]=$((EPOCHSECONDS + RECHECK_SECONDS))
		((v != 2)) || rc=1
		if [[ -n "${have}" ]]; then
			# Checked again: only a proof that the instance is not its
			# MIG's as the template made it takes the label.
			((v == 1)) || continue
			# Not labelled again while the instance keeps its id.
			[[ -z "${VERIFIED_ID}" ]] || REVOKED["${name}"]="${VERIFIED_ID}"
			if out="$(kubectl label node "${name}" "${VERIFIED_LABEL}-" --request-timeout=20s 2>&1 >/dev/null)"; then
				log "node ${name}: removed ${VERIFIED_LABEL}=${have}: ${VERDICT}"
			else
				log "node ${name}: removing ${VERIFIED_LABEL} failed: $(summary "${out}")"
				rc=1
				unset 'RECHECK_AT[${name}]'
			fi
			continue
		fi
		if ((v != 0)); then
			log "node ${name}: ${VERDICT}; not labelled"
			continue
		fi
		if [[ -n "${REVOKED[${name}]+x}" && "${REVOKED[${name}]}" == "${VERIFIED_ID}" ]]; then
			log "node ${name}: lost ${VERIFIED_LABEL} for what instance ${pid#gce://} ran, and it is the same instance (id ${VERIFIED_ID}); not labelled"
			continue
		fi
		if out="$(kubectl label node "${name}" "${VERIFIED_LABEL}=${want}" --request-timeout=20s 2>&1 >/dev/null)"; then
			log "node ${name}: labelled ${VERIFIED_LABEL}=${want}: instance ${pid#gce://} is RUNNING, created by its MIG, and runs its template"
		else
			log "node ${name}: labelling failed: $(summary "${out}")"
			rc=1
			unset 'RECHECK_AT[${name}]'
		fi
	done <"${WORK}/nodes"
	((left == 0)) || log "checking Nodes took the pass's ${PASS_SECONDS}s: ${left} wait for the next pass"
	return "${rc}"
}

written="with kubectl"
[[ -z "${API_URL}" ]] || written="with curl to ${API_URL}"
log "deciding kubelet client CSRs of ${CLOUD_BOOTSTRAP_GROUP} for the instances of ${!MAX_AGE[*]} in project ${PROJECT}, decisions written ${written}"
if [[ "${ONCE}" == 1 ]]; then
	rc=0
	pass || rc=1
	label_nodes || rc=1
	exit "${rc}"
fi
while true; do
	pass || true
	label_nodes || true
	sleep "${POLL_SECONDS}"
done
