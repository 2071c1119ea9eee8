#!/usr/bin/env bash
# Deletes the Node objects of nodegen's cloud VMs that no longer exist.
#
# Without a cloud-controller-manager nothing deletes the Node of a VM that
# the autoscaler or a MIG removed, and a VM recreated under the same name
# re-registers onto the old Node, whose taints kubeadm does not re-apply.
# This script is the narrow part of the cloud node lifecycle controller that
# this cluster needs, for nodegen's cloud groups only.
#
# One pass over the Nodes (the CronJob runs it every minute). A Node is
# considered only if it carries the verified group label (GROUP_LABEL, set by
# the node CSR approver once it checked the VM; no kubelet can set it) of one
# of NODE_GROUPS and the providerID gce://PROJECT/<zone>/<its own name>; every
# other Node (on-prem nodes, other providers, other projects, VMs the
# approver has not labelled) is skipped unread.
# A considered Node is deleted only when
#   - its Ready condition is not True (a Node without one, a registration
#     in flight, only once it was created more than GRACE_SECONDS ago), and
#   - the Compute API answers 404 for its instance, naming that instance,
#     with the VM service account's token from the metadata server;
# with preconditions on its uid and resourceVersion, so that a Node that
# changed since the list (a VM re-registered meanwhile) is never deleted.
# As the cloud node lifecycle controller does, a Node whose VM is gone goes
# at the first pass that sees it NotReady; a Node whose VM exists is kept,
# and logged as stuck once it has not been Ready for GRACE_SECONDS. Any
# other answer of the Compute API keeps the Node and is logged.
#
# A Ready Node of one of STUCK_GROUPS (the autoscaled GPU groups with a
# startup taint) that still carries the group's startup taint more than
# STARTUP_SECONDS after it became Ready (the init budget's time to be
# ready, the autoscaler's --max-node-startup-time, which the
# NodegenStartupTaintStuck alert uses too) is stuck initialising: its GPUs
# never validated, so the taint remover never lifted the taint. It is
# reported: a Warning Event (reason StuckInitialising) about the Node, in
# the default namespace where the node controllers write theirs, and the
# annotation STUCK_ANNOTATION on the Node holding the time it became Ready,
# both written once per stuck spell (the annotation says which spell was
# reported) and the annotation removed when the Node is no longer stuck.
# With REMOVE_STUCK=true its VM is then deleted through its MIG with
# instanceGroupManagers.deleteInstances, which lowers the MIG's target size
# so that the MIG does not recreate the VM, leaving the next scale-up to
# the autoscaler (Compute Engine API v1 reference,
# instanceGroupManagers.deleteInstances). Only a VM the Compute API has
# RUNNING and created by the group's MIG of the Node's zone is deleted.
# Once the VM is gone its Node is NotReady and the pass above deletes it.
# A Node that advertises the group's nvidia.com/gpu count has validated
# GPUs and is never touched, nor is a Node without the taint, or within
# its budget (counted from the Ready condition's last change, so a
# rebooted node gets its whole budget again).
#
# Environment:
#   PROJECT        GCP project of the cloud groups
#   NODE_GROUPS         comma-separated names of the cloud groups
#   GRACE_SECONDS  seconds a Node whose VM exists may be not Ready before the
#                  log calls it stuck; seconds a Node without a Ready
#                  condition is left alone after its creation
#   STARTUP_SECONDS  the init budget's time to be ready, in seconds
#   STUCK_GROUPS     comma-separated GROUP:MIG_BASE:GPUS:TAINT_KEY of the
#                    groups whose stuck nodes are handled: the MIG of zone Z
#                    is MIG_BASE-Z, GPUS the nvidia.com/gpu a validated node
#                    advertises, TAINT_KEY the startup taint's key
#   REMOVE_STUCK     true: delete a stuck node's VM through its MIG;
#                    false: only log it
# Exit status: 0 when every considered Node was decided, 1 when something
# could not be read or deleted (the next run tries again).
set -euo pipefail

: "${PROJECT:?PROJECT is required}"
: "${NODE_GROUPS:?NODE_GROUPS is required}"
: "${GRACE_SECONDS:?GRACE_SECONDS is required}"
: "${STARTUP_SECONDS:?STARTUP_SECONDS is required}"
: "${STUCK_GROUPS?STUCK_GROUPS is required}"
: "${REMOVE_STUCK:?REMOVE_STUCK is required}"
readonly METADATA_URL=http://169.254.169.254/computeMetadata/v1
readonly COMPUTE_URL=https://compute.googleapis.com/compute/v1
readonly GROUP_LABEL=node-restriction.kubernetes.io/nodegen-node-group
readonly ZONE_RE='^[a-z]+-[a-z]+[0-9]+-[a-z]$'
readonly NAME_RE='^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$'
readonly STUCK_ANNOTATION=nodegen.dev/stuck-initialising
readonly STUCK_REASON=StuckInitialising
readonly TIME_RE='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'
WORK="$(mktemp -d)"
readonly WORK
trap 'rm -rf "${WORK}"' EXIT

log() { printf '%s node-lifecycle: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"; }

# summary prints the last line of a command's error output.
summary() {
	local s="${1%$'\n'}"
	printf '%s' "${s##*$'\n'}"
}

# token sets TOKEN to the access token of the VM's service account.
token() {
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
}

# instance_status prints the HTTP status of GET instance $2 in zone $1 and
# leaves the body in WORK/body. The token goes to curl on stdin, never on
# its command line.
instance_status() {
	local zone="$1" name="$2"
	printf 'header = "Authorization: Bearer %s"\n' "${TOKEN}" |
		curl -sS --max-time 10 -K - -o "${WORK}/body" -w '%{http_code}' \
			"${COMPUTE_URL}/projects/${PROJECT}/zones/${zone}/instances/${name}" 2>"${WORK}/err"
}

# field NAME prints the first string value of NAME in WORK/body: the
# Compute API writes an instance's own status before any nested object.
field() {
	grep -oE "\"$1\"[[:space:]]*:[[:space:]]*\"[^\"]*\"" "${WORK}/body" | head -n 1 | sed -E 's/.*:[[:space:]]*"([^"]*)"$/\1/'
}

# created_by prints the created-by metadata value of the instance in
# WORK/body: the URL of the MIG that made it.
created_by() {
	grep -oE '"key"[[:space:]]*:[[:space:]]*"created-by"[[:space:]]*,[[:space:]]*"value"[[:space:]]*:[[:space:]]*"[^"]*"' "${WORK}/body" | head -n 1 | sed -E 's/.*"([^"]*)"$/\1/'
}

# delete_instance prints the HTTP status of deleteInstances of instance
# $3 in zone $1 through MIG $2, and leaves the body in WORK/body.
delete_instance() {
	local zone="$1" mig="$2" name="$3"
	printf 'header = "Authorization: Bearer %s"\n' "${TOKEN}" |
		curl -sS --max-time 10 -K - -o "${WORK}/body" -w '%{http_code}' -X POST \
			-H 'Content-Type: application/json' --data "{\"instances\":[\"zones/${zone}/instances/${name}\"]}" \
			"${COMPUTE_URL}/projects/${PROJECT}/zones/${zone}/instanceGroupManagers/${mig}/deleteInstances" 2>"${WORK}/err"
}

# annotate NAME RV VALUE sets STUCK_ANNOTATION on Node NAME to VALUE (a
# JSON string, or null to remove it) if its resourceVersion is still RV,
# and prints the API server's answer. Status 1 when the patch failed.
annotate() {
	kubectl patch node "$1" --type=merge --request-timeout=10s \
		-p "{\"metadata\":{\"resourceVersion\":\"$2\",\"annotations\":{\"${STUCK_ANNOTATION}\":$3}}}" 2>&1
}

# unmark NAME RV MARK removes STUCK_ANNOTATION (whose value is MARK, ""
# when it has none) from Node NAME, which is no longer stuck initialising,
# if its resourceVersion is still RV. Status 1 when the patch failed.
unmark() {
	local name="$1" rv="$2" mark="$3" out
	[[ -n "${mark}" ]] || return 0
	if ! out="$(annotate "${name}" "${rv}" null)"; then
		log "node ${name}: removing the annotation ${STUCK_ANNOTATION} failed (the next run looks again): $(summary "${out}")"
		return 1
	fi
	log "node ${name}: no longer stuck initialising; removed the annotation ${STUCK_ANNOTATION}=${mark}"
}

# report NAME UID RV SINCE WHAT MARK reports Node NAME (uid UID,
# resourceVersion RV), stuck initialising since it became Ready at SINCE,
# once per stuck spell: unless its STUCK_ANNOTATION (MARK) already holds
# SINCE, a Warning Event about it whose message is WHAT, then
# STUCK_ANNOTATION=SINCE on it (if its resourceVersion is still RV). An
# Event left by a run whose annotation failed is found by its name.
# Status 1 when something could not be written.
report() {
	local name="$1" uid="$2" rv="$3" since="$4" what="$5" mark="$6" now out
	[[ "${mark}" != "${since}" ]] || return 0
	local event="${name}.stuck-initialising.${since//:/-}"
	event="${event,,}"
	local msg="${what//\\/\\\\}"
	msg="${msg//\"/\\\"}"
	TZ=UTC printf -v now '%(%Y-%m-%dT%H:%M:%SZ)T' -1
	if ! out="$(printf '{"apiVersion":"v1","kind":"Event","metadata":{"name":"%s","namespace":"default"},"involvedObject":{"apiVersion":"v1","kind":"Node","name":"%s","uid":"%s"},"reason":"%s","message":"%s","type":"Warning","source":{"component":"nodegen-node-lifecycle"},"reportingComponent":"nodegen-node-lifecycle","firstTimestamp":"%s","lastTimestamp":"%s","count":1}' \
		"${event}" "${name}" "${uid}" "${STUCK_REASON}" "${msg}" "${now}" "${now}" |
		kubectl create -f - --request-timeout=10s 2>&1)"; then
		if [[ "${out}" != *AlreadyExists* ]]; then
			log "node ${name}: creating Event default/${event} failed (the next run tries again): $(summary "${out}")"
			return 1
		fi
	fi
	if ! out="$(annotate "${name}" "${rv}" "\"${since}\"")"; then
		log "node ${name}: setting the annotation ${STUCK_ANNOTATION} failed (the next run tries again): $(summary "${out}")"
		return 1
	fi
	log "node ${name}: reported stuck initialising: Event default/${event} (${STUCK_REASON}), annotation ${STUCK_ANNOTATION}=${since}"
}

# stuck NAME UID RV GROUP ZONE SINCE TAINT_KEYS ALLOCATABLE MARK handles a
# Ready Node (its Ready condition True since SINCE, its STUCK_ANNOTATION
# MARK) of a group in STUCK_GROUPS whose startup taint outlived the init
# budget: reported, and removed when REMOVE_STUCK says so; from any other
# Node it only removes STUCK_ANNOTATION.
# Status 1 when something could not be read or written.
stuck() {
	local name="$1" uid="$2" rv="$3" group="$4" zone="$5" since="$6" taints="$7" alloc="$8" mark="$9"
	if [[ -z "${STUCK_KEY["${group}"]+x}" ]]; then
		unmark "${name}" "${rv}" "${mark}"
		return
	fi
	local key="${STUCK_KEY["${group}"]}" gpus="${STUCK_GPUS["${group}"]}"
	local mig="${STUCK_MIG["${group}"]}-${zone}" k tainted=""
	local -a keys
	read -ra keys <<<"${taints}"
	for k in "${keys[@]}"; do
		[[ "${k}" != "${key}" ]] || tainted=1
	done
	if [[ -z "${tainted}" ]]; then
		unmark "${name}" "${rv}" "${mark}"
		return
	fi
	if [[ ! "${since}" =~ ${TIME_RE} ]]; then
		log "node ${name}: unreadable Ready time ${since@Q}; kept"
		return 1
	fi
	if [[ ! "${since}" < "${STUCK_CUTOFF}" ]]; then
		unmark "${name}" "${rv}" "${mark}"
		return
	fi
	local what="startup taint ${key} still on it, Ready since ${since}, past the init budget of ${STARTUP_SECONDS}s to be ready"
	if [[ ! "${alloc:-0}" =~ ^[0-9]+$ ]]; then
		log "node ${name}: ${what}, nvidia.com/gpu allocatable ${alloc@Q} unreadable; kept"
		return 1
	fi
	if ((${alloc:-0} >= gpus)); then
		log "node ${name}: ${what}, but it advertises ${alloc} nvidia.com/gpu of ${gpus}: its GPUs validated; kept"
		unmark "${name}" "${rv}" "${mark}"
		return
	fi
	what="stuck initialising: ${what}, nvidia.com/gpu allocatable ${alloc:-0} of ${gpus}"
	report "${name}" "${uid}" "${rv}" "${since}" "${what}" "${mark}" || return 1
	if [[ "${REMOVE_STUCK}" != true ]]; then
		log "node ${name}: ${what}; kept (removing stuck nodes is off)"
		return 0
	fi
	if [[ -z "${TOKEN}" ]]; then
		token || return 1
	fi
	local status by
	status="$(instance_status "${zone}" "${name}")" || status="${status:-000}"
	if [[ "${status}" != 200 ]]; then
		log "node ${name}: ${what}; the Compute API answered ${status} for VM ${zone}/${name}; kept"
		return 1
	fi
	status="$(field status)" by="$(created_by)"
	if [[ "$(field name)" != "${name}" || "${status}" != RUNNING ]]; then
		log "node ${name}: ${what}; VM ${zone}/${name} is ${status:-of no status}, not RUNNING; kept"
		return 0
	fi
	if [[ "${by}" != */zones/"${zone}/instanceGroupManagers/${mig}" ]]; then
		log "node ${name}: ${what}; VM ${zone}/${name} was not created by MIG ${mig} (created-by: ${by:-none}); kept"
		return 1
	fi
	status="$(delete_instance "${zone}" "${mig}" "${name}")" || status="${status:-000}"
	if [[ "${status}" != 200 ]]; then
		log "node ${name}: ${what}; deleteInstances of MIG ${mig} answered ${status} ($(summary "$(head -c 300 "${WORK}/body" 2>/dev/null; cat "${WORK}/err")")); kept"
		return 1
	fi
	log "node ${name}: ${what}; deleted VM ${zone}/${name} through MIG ${mig} (deleteInstances: the MIG's target size goes down by one, the autoscaler may scale up again); its Node goes once the VM is gone"
}

# delete_node deletes Node $1 if its uid is still $2 and its
# resourceVersion still $3.
delete_node() {
	local out
	if ! out="$(printf '{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"%s","resourceVersion":"%s"}}' "$2" "$3" |
		kubectl delete --raw "/api/v1/nodes/$1" -f - --request-timeout=10s 2>&1)"; then
		log "node $1: deleting failed (kept; the next run looks again): $(summary "${out}")"
		return 1
	fi
	return 0
}

main() {
	local cutoff nodes rc=0 line
	local name uid rv pid group ready since created
	local -A wanted=()
	local g
	IFS=, read -ra g <<<"${NODE_GROUPS}"
	for name in "${g[@]}"; do
		wanted["${name}"]=1
	done
	TZ=UTC printf -v cutoff '%(%Y-%m-%dT%H:%M:%SZ)T' $((EPOCHSECONDS - GRACE_SECONDS))
	TZ=UTC printf -v STUCK_CUTOFF '%(%Y-%m-%dT%H:%M:%SZ)T' $((EPOCHSECONDS - STARTUP_SECONDS))
	declare -gA STUCK_KEY=() STUCK_GPUS=() STUCK_MIG=()
	local entry
	local -a s
	IFS=, read -ra g <<<"${STUCK_GROUPS}"
	for entry in "${g[@]}"; do
		IFS=: read -ra s <<<"${entry}"
		STUCK_MIG["${s[0]}"]="${s[1]}" STUCK_GPUS["${s[0]}"]="${s[2]}" STUCK_KEY["${s[0]}"]="${s[3]}"
	done

	# One line per Node of the groups: name uid resourceVersion providerID
	# group Ready-status Ready-lastTransitionTime creationTimestamp
	# taint-keys nvidia.com/gpu-allocatable STUCK_ANNOTATION, each field
	# ended by a 0x1f
	# (unit separator), which no field can hold.
	local sep=$'\x1f'
	local fmt='{range .items[*]}{.metadata.name}{"\x1f"}{.metadata.uid}{"\x1f"}{.metadata.resourceVersion}{"\x1f"}{.spec.providerID}{"\x1f"}{.metadata.labels.node-restriction\.kubernetes\.io/nodegen-node-group}{"\x1f"}{.status.conditions[?(@.type=="Ready")].status}{"\x1f"}{.status.conditions[?(@.type=="Ready")].lastTransitionTime}{"\x1f"}{.metadata.creationTimestamp}{"\x1f"}{.spec.taints[*].key}{"\x1f"}{.status.allocatable.nvidia\.com/gpu}{"\x1f"}{.metadata.annotations.nodegen\.dev/stuck-initialising}{"\x1f"}{"\n"}{end}'
	if ! nodes="$(kubectl get nodes --request-timeout=15s -l "${GROUP_LABEL} in (${NODE_GROUPS})" -o "jsonpath=${fmt}" 2>"${WORK}/err")"; then
		log "cannot list the nodes: $(summary "$(cat "${WORK}/err")")"
		return 1
	fi

	TOKEN=""
	local -a f
	while IFS= read -r line; do
		[[ -n "${line}" ]] || continue
		IFS="${sep}" read -ra f <<<"${line}"
		if ((${#f[@]} != 11)); then
			log "skipping a node line of ${#f[@]} fields, want 11"
			continue
		fi
		name="${f[0]}" uid="${f[1]}" rv="${f[2]}" pid="${f[3]}" group="${f[4]}" ready="${f[5]}" since="${f[6]}" created="${f[7]}"
		[[ -n "${wanted["${group}"]+x}" ]] || continue
		# Only gce://PROJECT/<zone>/<the node's own name>.
		local rest="${pid#"gce://${PROJECT}/"}"
		[[ "${rest}" != "${pid}" ]] || continue
		local zone="${rest%%/*}" instance="${rest#*/}"
		[[ "${zone}" =~ ${ZONE_RE} && "${instance}" =~ ${NAME_RE} && "${instance}" == "${name}" ]] || continue
		if [[ "${ready}" == True ]]; then
			stuck "${name}" "${uid}" "${rv}" "${group}" "${zone}" "${since}" "${f[8]}" "${f[9]}" "${f[10]}" || rc=1
			continue
		fi
		local registering=""
		if [[ -z "${ready}" ]]; then
			since="${created}" registering=1
		fi
		if [[ ! "${since}" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]]; then
			log "node ${name}: unreadable time ${since@Q}; kept"
			rc=1
			continue
		fi
		local past_grace=""
		[[ ! "${since}" < "${cutoff}" ]] || past_grace=1
		if [[ -n "${registering}" && -z "${past_grace}" ]]; then
			log "node ${name}: Ready is missing since ${since}, within the grace period of ${GRACE_SECONDS}s for a registration; kept"
			continue
		fi
		if [[ -z "${TOKEN}" ]]; then
			token || return 1
		fi
		local status
		status="$(instance_status "${zone}" "${instance}")" || status="${status:-000}"
		case "${status}" in
		200)
			if [[ -n "${past_grace}" ]]; then
				log "node ${name}: Ready is ${ready:-missing} since ${since}, past the grace period of ${GRACE_SECONDS}s, but VM ${zone}/${instance} exists; kept (stuck: a stopped VM or a broken kubelet)"
			else
				log "node ${name}: Ready is ${ready:-missing} since ${since}, but VM ${zone}/${instance} exists; kept"
			fi
			;;
		404)
			if ! grep -qF "projects/${PROJECT}/zones/${zone}/instances/${instance}" "${WORK}/body"; then
				log "node ${name}: the Compute API answered 404 without naming instance projects/${PROJECT}/zones/${zone}/instances/${instance}; kept"
				rc=1
				continue
			fi
			if delete_node "${name}" "${uid}" "${rv}"; then
				log "node ${name}: Ready is ${ready:-missing} since ${since} and VM ${zone}/${instance} does not exist; deleted the Node"
			else
				rc=1
			fi
			;;
		*)
			log "node ${name}: the Compute API answered ${status} for VM ${zone}/${instance} ($(summary "$(head -c 300 "${WORK}/body" 2>/dev/null; cat "${WORK}/err")")); kept"
			rc=1
			;;
		esac
	done <<<"${nodes}"
	return "${rc}"
}

main "$@"
