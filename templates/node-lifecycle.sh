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
# Environment:
#   PROJECT        GCP project of the cloud groups
#   NODE_GROUPS         comma-separated names of the cloud groups
#   GRACE_SECONDS  seconds a Node whose VM exists may be not Ready before the
#                  log calls it stuck; seconds a Node without a Ready
#                  condition is left alone after its creation
# Exit status: 0 when every considered Node was decided, 1 when something
# could not be read or deleted (the next run tries again).
set -euo pipefail

: "${PROJECT:?PROJECT is required}"
: "${NODE_GROUPS:?NODE_GROUPS is required}"
: "${GRACE_SECONDS:?GRACE_SECONDS is required}"
readonly METADATA_URL=http://169.254.169.254/computeMetadata/v1
readonly COMPUTE_URL=https://compute.googleapis.com/compute/v1
readonly GROUP_LABEL=node-restriction.kubernetes.io/nodegen-node-group
readonly ZONE_RE='^[a-z]+-[a-z]+[0-9]+-[a-z]$'
readonly NAME_RE='^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$'
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

	# One line per Node of the groups: name uid resourceVersion providerID
	# group Ready-status Ready-lastTransitionTime creationTimestamp, each
	# field ended by a 0x1f (unit separator), which no field can hold.
	local sep=$'\x1f'
	local fmt='{range .items[*]}{.metadata.name}{"\x1f"}{.metadata.uid}{"\x1f"}{.metadata.resourceVersion}{"\x1f"}{.spec.providerID}{"\x1f"}{.metadata.labels.node-restriction\.kubernetes\.io/nodegen-node-group}{"\x1f"}{.status.conditions[?(@.type=="Ready")].status}{"\x1f"}{.status.conditions[?(@.type=="Ready")].lastTransitionTime}{"\x1f"}{.metadata.creationTimestamp}{"\x1f"}{"\n"}{end}'
	if ! nodes="$(kubectl get nodes --request-timeout=15s -l "${GROUP_LABEL} in (${NODE_GROUPS})" -o "jsonpath=${fmt}" 2>"${WORK}/err")"; then
		log "cannot list the nodes: $(summary "$(cat "${WORK}/err")")"
		return 1
	fi

	TOKEN=""
	local -a f
	while IFS= read -r line; do
		[[ -n "${line}" ]] || continue
		IFS="${sep}" read -ra f <<<"${line}"
		if ((${#f[@]} != 8)); then
			log "skipping a node line of ${#f[@]} fields, want 8"
			continue
		fi
		name="${f[0]}" uid="${f[1]}" rv="${f[2]}" pid="${f[3]}" group="${f[4]}" ready="${f[5]}" since="${f[6]}" created="${f[7]}"
		[[ -n "${wanted["${group}"]+x}" ]] || continue
		# Only gce://PROJECT/<zone>/<the node's own name>.
		local rest="${pid#"gce://${PROJECT}/"}"
		[[ "${rest}" != "${pid}" ]] || continue
		local zone="${rest%%/*}" instance="${rest#*/}"
		[[ "${zone}" =~ ${ZONE_RE} && "${instance}" =~ ${NAME_RE} && "${instance}" == "${name}" ]] || continue
		[[ "${ready}" != True ]] || continue
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
