#!/usr/bin/env bash
# Removes this node's startup taint once the NVIDIA GPU Operator has validated
# the GPUs: every validation file exists and the node reports at least the
# expected nvidia.com/gpu allocatable. Until then the Cluster Autoscaler counts
# the node as coming up and adds no duplicate; after it, GPU pods schedule.
#
# Runs in the nodegen taint-remover DaemonSet (one pod per GPU node) with
# kubectl and the pod's own ServiceAccount. It reads the node and removes only
# its startup-taint key with a JSON patch guarded by the node's
# resourceVersion, so a concurrent change of the taints is never lost: the
# patch fails and the next round reads again. It never exits on an API error;
# it logs and retries. Once the taint is gone it stays idle.
#
# When it starts on a node that lacks the startup taint although its GPUs
# are not validated, it first adds the taint (exact key, value and effect,
# with the same resourceVersion guard), then waits and removes it as above.
# That node was re-registered under a reused name (a recreated VM reuses the
# old Node object, and kubeadm does not re-apply taints to an existing Node)
# or rebooted (/run/nvidia/validations is a tmpfs): without the taint the
# autoscaler would count it as ready and GPU pods would land on it before
# the GPUs work. It adds the taint only until its first successful decision
# after it starts, never later: validation files that vanish on a live node
# (a GPU Operator upgrade) must not take a working node out of service.
#
# Environment:
#   NODE_NAME          node to act on (the downward API's spec.nodeName)
#   STARTUP_TAINT_KEY  taint key to remove
#   STARTUP_TAINT_VALUE, STARTUP_TAINT_EFFECT
#                      value and effect of the taint when it is added back
#   GPU_COUNT          nvidia.com/gpu allocatable required
set -euo pipefail

: "${NODE_NAME:?NODE_NAME is required}"
: "${STARTUP_TAINT_KEY:?STARTUP_TAINT_KEY is required}"
: "${STARTUP_TAINT_VALUE?STARTUP_TAINT_VALUE is required}"
: "${STARTUP_TAINT_EFFECT:?STARTUP_TAINT_EFFECT is required}"
: "${GPU_COUNT:?GPU_COUNT is required}"
# The GPU Operator's status files (the DaemonSet mounts the node's folder
# at the same path).
readonly VALIDATIONS_DIR=/run/nvidia/validations
# Seconds between checks while waiting, and once done.
readonly INTERVAL=10
readonly IDLE_INTERVAL=300
# 1: one round (as at start), then exit: 0 removed or absent, 3 waiting
# for the GPUs (the taint is on the node, maybe just added), 4 API error or
# conflict; 0: check for ever.
readonly ONCE=0
# 1 until a round has read the node and decided: only then may the startup
# taint be added back.
STARTING=1
readonly VALIDATION_FILES=(driver-ready toolkit-ready cuda-ready plugin-ready)
REASON=""
ALLOC=0
ERRORS="$(mktemp)"
readonly ERRORS
trap 'rm -f "${ERRORS}"' EXIT

log() { printf '%s taint-remover node=%s: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${NODE_NAME}" "$*"; }

# summary prints the last line of kubectl's error output: its own one-line
# summary, after any client-go log lines (a refused connection logs five).
summary() {
	local s="${1%$'\n'}"
	printf '%s' "${s##*$'\n'}"
}

# unvalidated sets REASON and succeeds when the GPUs are not validated yet:
# a validation file is missing or nvidia.com/gpu allocatable (ALLOC) is
# below GPU_COUNT.
unvalidated() {
	local f
	for f in "${VALIDATION_FILES[@]}"; do
		if [[ ! -e "${VALIDATIONS_DIR}/${f}" ]]; then
			REASON="${VALIDATIONS_DIR}/${f} does not exist yet"
			return 0
		fi
	done
	if ((ALLOC < GPU_COUNT)); then
		REASON="nvidia.com/gpu allocatable is ${ALLOC}, want ${GPU_COUNT}"
		return 0
	fi
	return 1
}

# add_back adds the startup taint to a node that has none with its key
# (ntaints taints in all), guarded by the resourceVersion rv.
add_back() {
	local rv="$1" ntaints="$2" taint op out
	taint="$(printf '{"key":"%s","value":"%s","effect":"%s"}' "${STARTUP_TAINT_KEY}" "${STARTUP_TAINT_VALUE}" "${STARTUP_TAINT_EFFECT}")"
	if ((ntaints == 0)); then
		op="$(printf '{"op":"add","path":"/spec/taints","value":[%s]}' "${taint}")"
	else
		op="$(printf '{"op":"add","path":"/spec/taints/-","value":%s}' "${taint}")"
	fi
	if ! out="$(kubectl patch node "${NODE_NAME}" --request-timeout=20s --type=json \
		-p "$(printf '[{"op":"test","path":"/metadata/resourceVersion","value":"%s"},%s]' "${rv}" "${op}")" 2>&1)"; then
		log "adding ${STARTUP_TAINT_KEY} back failed (will read the node again): $(summary "${out}")"
		return 4
	fi
	log "no ${STARTUP_TAINT_KEY} taint at start but the GPUs are not validated (${REASON}): node re-registered under a reused name or rebooted; added ${STARTUP_TAINT_KEY}=${STARTUP_TAINT_VALUE}:${STARTUP_TAINT_EFFECT}"
	return 0
}

# round does one check; its status is that of ONCE above.
round() {
	local out rv idx=-1 i=0 ntaints
	# stderr apart from stdout: a warning kubectl prints must not be read
	# as the node's resourceVersion.
	if ! out="$(kubectl get node "${NODE_NAME}" --request-timeout=20s \
		-o 'jsonpath={.metadata.resourceVersion}{"\n"}{.status.allocatable.nvidia\.com/gpu}{"\n"}{range .spec.taints[*]}{.key}{"\n"}{end}' 2>"${ERRORS}")"; then
		log "cannot read the node (will retry): $(summary "$(cat "${ERRORS}")")"
		return 4
	fi
	local -a lines
	mapfile -t lines <<<"${out}"
	rv="${lines[0]}"
	ALLOC="${lines[1]:-0}"
	[[ "${ALLOC}" =~ ^[0-9]+$ ]] || ALLOC=0
	ntaints=$((${#lines[@]} > 2 ? ${#lines[@]} - 2 : 0))
	for ((i = 2; i < ${#lines[@]}; i++)); do
		if [[ "${lines[i]}" == "${STARTUP_TAINT_KEY}" ]]; then
			idx=$((i - 2))
			break
		fi
	done
	if ((idx < 0)); then
		if ((STARTING == 1)) && unvalidated; then
			add_back "${rv}" "${ntaints}" || return 4
			STARTING=0
			return 3
		fi
		STARTING=0
		return 0
	fi
	STARTING=0
	if unvalidated; then
		log "waiting: ${REASON}"
		return 3
	fi
	local patch
	patch="$(printf '[{"op":"test","path":"/metadata/resourceVersion","value":"%s"},{"op":"test","path":"/spec/taints/%d/key","value":"%s"},{"op":"remove","path":"/spec/taints/%d"}]' \
		"${rv}" "${idx}" "${STARTUP_TAINT_KEY}" "${idx}")"
	if ! out="$(kubectl patch node "${NODE_NAME}" --request-timeout=20s --type=json -p "${patch}" 2>&1)"; then
		log "removing ${STARTUP_TAINT_KEY} failed (will read the node again): $(summary "${out}")"
		return 4
	fi
	log "GPUs validated (${ALLOC} allocatable); removed taint ${STARTUP_TAINT_KEY}"
	# Another taint with the same key (a second effect) is removed next round.
	round
}

main() {
	local rc delay="${INTERVAL}" done_logged=0
	while true; do
		rc=0
		round || rc=$?
		if [[ "${ONCE}" == 1 ]]; then
			return "${rc}"
		fi
		case "${rc}" in
		0)
			if ((done_logged == 0)); then
				log "no ${STARTUP_TAINT_KEY} taint on the node; idle"
				done_logged=1
			fi
			delay="${IDLE_INTERVAL}"
			;;
		3) delay="${INTERVAL}" ;;
		*) delay=$((delay * 2 > 120 ? 120 : delay * 2)) ;;
		esac
		sleep "${delay}"
	done
}

main "$@"
