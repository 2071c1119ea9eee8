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
#   - the PEM request holds one CERTIFICATE REQUEST whose subject has
#     exactly one common name, system:node:<name>;
#   - <name> is <base>-<4 characters of [a-z0-9]> for the base instance name
#     of one of INSTANCE_GROUPS (a MIG's baseInstanceName);
#   - no other CSR of the group asks for <name> (a second one is denied with
#     it: two joins for one name are an attack or a mistake) and no approved
#     one did;
#   - no Node <name> is Ready;
#   - the Compute API (with the VM service account's token from the
#     metadata server) has instance <name> in one of the group's zones,
#     RUNNING, created by that zone's MIG (metadata created-by) at most
#     max-age seconds ago.
# Anything else is denied, with the reason in the CSR's Denied condition.
# When the Compute API cannot be read, the CSR stays pending and is tried
# again. Decisions go through the approval subresource with the CSR's
# resourceVersion, so a CSR that changed meanwhile is read again.
#
# After each pass over the CSRs, it gives each Node whose name is an instance
# name of one of INSTANCE_GROUPS the label VERIFIED_LABEL=<group> once the
# Compute API showed its VM: the Node's providerID is
# gce://PROJECT/<zone>/<name> for one of the group's zones, and instance
# <name> there is RUNNING and was created by that zone's MIG. A kubelet
# cannot set that label on itself (NodeRestriction refuses every
# node-restriction.kubernetes.io/ label to a kubelet), so the placements and
# policies that select on it rest on this check, not on what a node says of
# itself. A Node that fails the check is tried again after RECHECK_SECONDS.
# A Node carrying the label with another value than the group its name
# belongs to (a group renamed or removed, a mistake) loses it.
#
# Runs in the nodegen-node-csr-approver Deployment on the autoscaler's node,
# with kubectl (in-cluster ServiceAccount, or KUBECONFIG) and curl.
#
# Environment:
#   PROJECT                GCP project of the MIGs
#   CLOUD_BOOTSTRAP_GROUP  the cloud join token's bootstrap group
#   INSTANCE_GROUPS        one line per node group: "<base> <group> <max-age-seconds> <zone>..."
#   VERIFIED_LABEL         the label the checked Nodes get (node-restriction.kubernetes.io/...)
#   RECHECK_SECONDS        seconds before a Node that failed the check is checked again (60)
#   POLL_SECONDS           seconds between passes (2)
#   ONCE                   1: one pass, then exit (0, or 1 if something could not be read)
#   METADATA_URL           metadata server (http://169.254.169.254/computeMetadata/v1)
#   COMPUTE_URL            Compute API (https://compute.googleapis.com/compute/v1)
set -euo pipefail

: "${PROJECT:?PROJECT is required}"
: "${CLOUD_BOOTSTRAP_GROUP:?CLOUD_BOOTSTRAP_GROUP is required}"
: "${INSTANCE_GROUPS:?INSTANCE_GROUPS is required}"
: "${VERIFIED_LABEL:?VERIFIED_LABEL is required}"
RECHECK_SECONDS="${RECHECK_SECONDS:-60}"
POLL_SECONDS="${POLL_SECONDS:-2}"
ONCE="${ONCE:-0}"
METADATA_URL="${METADATA_URL:-http://169.254.169.254/computeMetadata/v1}"
COMPUTE_URL="${COMPUTE_URL:-https://compute.googleapis.com/compute/v1}"
readonly SIGNER=kubernetes.io/kube-apiserver-client-kubelet
readonly NAME_RE='^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$'
readonly REASON_APPROVED=NodegenInstanceVerified
readonly REASON_DENIED=NodegenNotAFreshInstance
WORK="$(mktemp -d)"
readonly WORK
trap 'rm -rf "${WORK}"' EXIT

log() { printf '%s node-csr-approver: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"; }

# summary prints the last line of a command's error output.
summary() {
	local s="${1%$'\n'}"
	printf '%s' "${s##*$'\n'}"
}

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
# When a Node that failed the label check may be checked again.
declare -A RECHECK_AT=()

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

# common_name prints the subject common name of the base64 PEM CSR $1, or
# fails unless the PEM is one CERTIFICATE REQUEST block without headers
# whose subject has exactly one common name (OID 2.5.4.3) with a short
# UTF8String or PrintableString value. The DER is read as hex bytes.
common_name() {
	local pem body
	pem="$(printf '%s' "$1" | base64 -d 2>/dev/null)" || return 1
	[[ "$(grep -c -- '-----BEGIN ' <<<"${pem}")" == 1 && "$(grep -c -- '-----END ' <<<"${pem}")" == 1 ]] || return 1
	body="$(sed -n '/^-----BEGIN CERTIFICATE REQUEST-----$/,/^-----END CERTIFICATE REQUEST-----$/p' <<<"${pem}" | sed '1d;$d')"
	[[ -n "${body}" && "${body}" != *:* ]] || return 1
	local -a h
	read -ra h <<<"$(printf '%s' "${body}" | tr -d ' \r\n\t' | base64 -d 2>/dev/null | od -An -v -tx1 | tr '\n' ' ')"
	local i n=${#h[@]} at=-1 count=0
	for ((i = 0; i + 6 < n; i++)); do
		if [[ "${h[i]}" == 06 && "${h[i + 1]}" == 03 && "${h[i + 2]}" == 55 && "${h[i + 3]}" == 04 && "${h[i + 4]}" == 03 ]]; then
			at=$i
			count=$((count + 1))
		fi
	done
	((count == 1)) || return 1
	local tag="${h[at + 5]}" len=$((16#${h[at + 6]})) out="" j
	[[ "${tag}" == 0c || "${tag}" == 13 ]] && ((len < 128 && at + 7 + len <= n)) || return 1
	for ((j = at + 7; j < at + 7 + len; j++)); do
		# Only printable ASCII: the name is checked against a pattern next.
		((16#${h[j]} >= 32 && 16#${h[j]} < 127)) || return 1
		# shellcheck disable=SC2059 # the format is \xHH of a checked hex byte
		out+="$(printf "\\x${h[j]}")"
	done
	printf '%s' "${out}"
}

# decide NAME RESOURCE_VERSION TYPE REASON MESSAGE writes the Approved or
# Denied condition through the approval subresource.
decide() {
	local out msg
	# The message is made of names checked against patterns and of values
	# the Compute API returned: keep JSON-safe characters only.
	msg="$(printf '%s' "$5" | LC_ALL=C tr -cd 'A-Za-z0-9 ._:/,()<>=+-')"
	printf '{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"%s","resourceVersion":"%s"},"status":{"conditions":[{"type":"%s","status":"True","reason":"%s","message":"%s"}]}}' \
		"$1" "$2" "$3" "$4" "${msg}" >"${WORK}/decision.json"
	if ! out="$(kubectl replace --raw "/apis/certificates.k8s.io/v1/certificatesigningrequests/$1/approval" \
		-f "${WORK}/decision.json" --request-timeout=20s 2>&1 >/dev/null)"; then
		log "CSR $1: writing ${3} failed (read again next pass): $(summary "${out}")"
		return 1
	fi
	log "CSR $1: ${3}: ${msg}"
}

deny() { decide "$1" "$2" Denied "${REASON_DENIED}" "$3"; }

# group_of NAME prints the base instance name NAME is an instance of.
group_of() {
	local base
	for base in "${!MAX_AGE[@]}"; do
		if [[ "$1" =~ ^${base}-[a-z0-9]{4}$ ]]; then
			printf '%s' "${base}"
			return 0
		fi
	done
	return 1
}

# instance_config ZONE MIG NAME succeeds when MIG ZONE/MIG holds a
# per-instance config for instance NAME (its own metadata, such as a
# startup-script, or disks that a MIG applies to that one VM, which
# nodegen never sets): status 1 when it holds none, 2 when the Compute API
# could not be read. instanceGroupManagers.listPerInstanceConfigs is a POST
# with an empty body, in pages of at most 500 items, each named after its
# instance; it needs compute.instanceGroupManagers.get on the MIG.
instance_config() {
	local url code page="" n
	for ((n = 0; n < 20; n++)); do
		url="${COMPUTE_URL}/projects/${PROJECT}/zones/$1/instanceGroupManagers/$2/listPerInstanceConfigs"
		[[ -z "${page}" ]] || url+="?pageToken=${page}"
		code="$(printf 'header = "Authorization: Bearer %s"\n' "${TOKEN}" |
			curl -sS --max-time 10 -K - -X POST -d '' -o "${WORK}/body" -w '%{http_code}' "${url}" 2>"${WORK}/err")" || code="000"
		tr -d '\n' <"${WORK}/body" >"${WORK}/configs" 2>/dev/null || : >"${WORK}/configs"
		if [[ "${code}" != 200 ]]; then
			log "the Compute API answered ${code} for the per-instance configs of MIG $1/$2 ($(summary "$(head -c 300 "${WORK}/configs"; cat "${WORK}/err")"))"
			[[ "${code}" != 401 ]] || TOKEN=""
			return 2
		fi
		# Any "name" equal to the instance's counts, a metadata key included:
		# a false match refuses a VM, never admits one.
		grep -qE "\"name\"[[:space:]]*:[[:space:]]*\"$3\"" "${WORK}/configs" && return 0
		page="$(grep -oE '"nextPageToken"[[:space:]]*:[[:space:]]*"[^"]*"' "${WORK}/configs" | head -n 1 | sed -E 's/.*:[[:space:]]*"([^"]*)"$/\1/')"
		[[ -n "${page}" ]] || return 1
		if [[ ! "${page}" =~ ^[A-Za-z0-9_=-]+$ ]]; then
			log "the per-instance configs of MIG $1/$2: a nextPageToken of unexpected characters"
			return 2
		fi
	done
	log "the per-instance configs of MIG $1/$2: more than ${n} pages"
	return 2
}

# check_instance CSR RV NAME BASE decides a CSR whose name passed the
# cluster checks, against the Compute API. Status 1 leaves it pending.
check_instance() {
	local csr="$1" rv="$2" name="$3" base="$4" zone code status created by when age pic
	local -a zones
	read -ra zones <<<"${ZONES[${base}]}"
	token || return 1
	for zone in "${zones[@]}"; do
		code="$(instance_status "${zone}" "${name}")"
		case "${code}" in
		404) continue ;;
		200) ;;
		*)
			log "CSR ${csr}: the Compute API answered ${code} for instance ${zone}/${name} ($(summary "$(head -c 300 "${WORK}/instance"; cat "${WORK}/err")")); left pending"
			[[ "${code}" != 401 ]] || TOKEN=""
			return 1
			;;
		esac
		status="$(field status)"
		created="$(field creationTimestamp)"
		by="$(created_by)"
		if [[ "$(field name)" != "${name}" ]]; then
			log "CSR ${csr}: the Compute API's instance ${zone}/${name} names another instance; left pending"
			return 1
		fi
		if [[ "${status}" != RUNNING ]]; then
			deny "${csr}" "${rv}" "instance ${zone}/${name} is ${status:-of no status}, not RUNNING"
			return
		fi
		if [[ "${by}" != */zones/"${zone}/instanceGroupManagers/${base}-${zone}" ]]; then
			deny "${csr}" "${rv}" "instance ${zone}/${name} was not created by MIG ${base}-${zone} (created-by: ${by:-none})"
			return
		fi
		if ! when="$(rfc3339_epoch "${created}")"; then
			log "CSR ${csr}: unreadable creationTimestamp ${created@Q} of instance ${zone}/${name}; left pending"
			return 1
		fi
		age=$((EPOCHSECONDS - when))
		if ((age > MAX_AGE[${base}])); then
			deny "${csr}" "${rv}" "instance ${zone}/${name} was created ${age}s ago, more than ${MAX_AGE[${base}]}s: not a fresh VM"
			return
		fi
		pic=0
		instance_config "${zone}" "${base}-${zone}" "${name}" || pic=$?
		if ((pic == 0)); then
			deny "${csr}" "${rv}" "MIG ${base}-${zone} holds a per-instance config for ${name}: its VM may not run the group's template as is"
			return
		fi
		if ((pic != 1)); then
			log "CSR ${csr}: the per-instance configs of MIG ${base}-${zone} could not be read; left pending"
			return 1
		fi
		decide "${csr}" "${rv}" Approved "${REASON_APPROVED}" \
			"instance projects/${PROJECT}/zones/${zone}/instances/${name} is RUNNING, created ${age}s ago by MIG ${base}-${zone}"
		return
	done
	deny "${csr}" "${rv}" "no instance ${name} in zones ${ZONES[${base}]} of project ${PROJECT}"
}

# pass decides every pending CSR of the cloud join token once.
pass() {
	local sep=$'\x1f' rc=0 line
	local fmt='{range .items[*]}{.metadata.name}{"\x1f"}{.metadata.resourceVersion}{"\x1f"}{.spec.signerName}{"\x1f"}{.spec.username}{"\x1f"}{.spec.groups}{"\x1f"}{.status.conditions[*].type}{"\x1f"}{.spec.request}{"\x1f"}{"\n"}{end}'
	if ! kubectl get csr --request-timeout=20s -o "jsonpath=${fmt}" >"${WORK}/csrs" 2>"${WORK}/err"; then
		log "cannot list the CSRs: $(summary "$(cat "${WORK}/err")")"
		return 1
	fi
	# First: the common name of every CSR of the group, and which are
	# pending, so that two CSRs for one name are seen together.
	local -a f names=() rvs=() users=() cns=() pending=()
	local -A asked=() issued=()
	while IFS= read -r line; do
		[[ -n "${line}" ]] || continue
		IFS="${sep}" read -ra f <<<"${line}"
		((${#f[@]} == 7)) || continue
		[[ "${f[2]}" == "${SIGNER}" && "${f[4]}" == *"\"${CLOUD_BOOTSTRAP_GROUP}\""* ]] || continue
		local cn=""
		cn="$(common_name "${f[6]}")" || cn=""
		names+=("${f[0]}") rvs+=("${f[1]}") users+=("${f[3]}") cns+=("${cn}")
		if [[ -z "${f[5]}" ]]; then
			pending+=(1)
			[[ -z "${cn}" ]] || asked["${cn}"]=$((${asked["${cn}"]:-0} + 1))
		else
			pending+=(0)
			[[ "${f[5]}" != *Approved* || -z "${cn}" ]] || issued["${cn}"]="${f[0]}"
		fi
	done <"${WORK}/csrs"

	local i csr rv cn name base ready
	for i in "${!names[@]}"; do
		((pending[i])) || continue
		csr="${names[i]}" rv="${rvs[i]}" cn="${cns[i]}"
		if [[ "${users[i]}" != system:bootstrap:* ]]; then
			deny "${csr}" "${rv}" "requested by ${users[i]}, not by a bootstrap token" || rc=1
			continue
		fi
		if [[ "${cn}" != system:node:* ]]; then
			deny "${csr}" "${rv}" "not one PEM certificate request with exactly one common name system:node:<name>" || rc=1
			continue
		fi
		name="${cn#system:node:}"
		if [[ ! "${name}" =~ ${NAME_RE} ]] || ! base="$(group_of "${name}")"; then
			deny "${csr}" "${rv}" "${name} is not the name of an instance of any nodegen MIG of this cluster" || rc=1
			continue
		fi
		if [[ -n "${issued["${cn}"]+x}" ]]; then
			deny "${csr}" "${rv}" "CSR ${issued["${cn}"]} for ${name} was already approved" || rc=1
			continue
		fi
		if ((${asked["${cn}"]} > 1)); then
			deny "${csr}" "${rv}" "${asked["${cn}"]} pending CSRs ask for ${name}: all are denied" || rc=1
			continue
		fi
		if ! ready="$(kubectl get node "${name}" --request-timeout=20s --ignore-not-found \
			-o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>"${WORK}/err")"; then
			log "CSR ${csr}: cannot read node ${name}: $(summary "$(cat "${WORK}/err")"); left pending"
			rc=1
			continue
		fi
		if [[ "${ready}" == True ]]; then
			deny "${csr}" "${rv}" "a Ready Node ${name} exists" || rc=1
			continue
		fi
		check_instance "${csr}" "${rv}" "${name}" "${base}" || rc=1
	done
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
# and the MIG holds no per-instance config for it. Status 1: it is not; 2: the Compute API could not be read.
verify_node() {
	local name="$1" base="$2" pid="$3" zone="" z code by
	local -a zones
	read -ra zones <<<"${ZONES[${base}]}"
	for z in "${zones[@]}"; do
		[[ "${pid}" != "gce://${PROJECT}/${z}/${name}" ]] || zone="${z}"
	done
	if [[ -z "${zone}" ]]; then
		log "node ${name}: providerID ${pid:-none} is not gce://${PROJECT}/<one of ${ZONES[${base}]}>/${name}; not labelled"
		return 1
	fi
	token || return 2
	code="$(instance_status "${zone}" "${name}")"
	if [[ "${code}" != 200 ]]; then
		log "node ${name}: the Compute API answered ${code} for instance ${zone}/${name}; not labelled"
		[[ "${code}" != 401 ]] || TOKEN=""
		[[ "${code}" == 404 ]] && return 1
		return 2
	fi
	by="$(created_by)"
	if [[ "$(field name)" != "${name}" || "$(field status)" != RUNNING || "${by}" != */zones/"${zone}/instanceGroupManagers/${base}-${zone}" ]]; then
		log "node ${name}: instance ${zone}/${name} is $(field status), created by ${by:-none}, not a RUNNING instance of MIG ${base}-${zone}; not labelled"
		return 1
	fi
	local pic=0
	instance_config "${zone}" "${base}-${zone}" "${name}" || pic=$?
	if ((pic == 0)); then
		log "node ${name}: MIG ${base}-${zone} holds a per-instance config for it; not labelled"
		return 1
	fi
	((pic == 1)) || return 2
}

# label_nodes gives VERIFIED_LABEL to every Node verify_node proves an
# instance of a group's MIG, and takes it from every Node whose name is
# not an instance name of the group it names.
label_nodes() {
	local sep=$'\x1f' rc=0 line name pid have want base out v
	local fmt='{range .items[*]}{.metadata.name}{"\x1f"}{.spec.providerID}{"\x1f"}{.metadata.labels.'"${VERIFIED_LABEL//./\\.}"'}{"\x1f"}{"\n"}{end}'
	if ! kubectl get nodes --request-timeout=20s -o "jsonpath=${fmt}" >"${WORK}/nodes" 2>"${WORK}/err"; then
		log "cannot list the nodes: $(summary "$(cat "${WORK}/err")")"
		return 1
	fi
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
		[[ -z "${have}" && -n "${want}" ]] || continue
		((EPOCHSECONDS >= ${RECHECK_AT["${name}"]:-0})) || continue
		v=0
		verify_node "${name}" "${base}" "${pid}" || v=$?
		if ((v != 0)); then
			RECHECK_AT["${name}"]=$((EPOCHSECONDS + RECHECK_SECONDS))
			((v == 1)) || rc=1
			continue
		fi
		if out="$(kubectl label node "${name}" "${VERIFIED_LABEL}=${want}" --request-timeout=20s 2>&1 >/dev/null)"; then
			log "node ${name}: labelled ${VERIFIED_LABEL}=${want}: instance ${pid#gce://} is RUNNING, created by its MIG"
			unset 'RECHECK_AT[${name}]'
		else
			log "node ${name}: labelling failed: $(summary "${out}")"
			rc=1
		fi
	done <"${WORK}/nodes"
	return "${rc}"
}

log "deciding kubelet client CSRs of ${CLOUD_BOOTSTRAP_GROUP} for the instances of ${!MAX_AGE[*]} in project ${PROJECT}"
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
