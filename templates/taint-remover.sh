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
# Environment:
#   NODE_NAME          node to act on (the downward API's spec.nodeName)
#   STARTUP_TAINT_KEY  taint key to remove
#   GPU_COUNT          nvidia.com/gpu allocatable required
#   VALIDATIONS_DIR    GPU Operator status files (/run/nvidia/validations)
#   INTERVAL           seconds between checks while waiting (10)
#   IDLE_INTERVAL      seconds between checks once done (300)
#   ONCE               if 1, do one round and exit: 0 removed or absent,
#                      3 waiting for the GPUs, 4 API error or conflict
set -euo pipefail

: "${NODE_NAME:?NODE_NAME is required}"
: "${STARTUP_TAINT_KEY:?STARTUP_TAINT_KEY is required}"
: "${GPU_COUNT:?GPU_COUNT is required}"
VALIDATIONS_DIR="${VALIDATIONS_DIR:-/run/nvidia/validations}"
INTERVAL="${INTERVAL:-10}"
IDLE_INTERVAL="${IDLE_INTERVAL:-300}"
ONCE="${ONCE:-0}"
readonly VALIDATION_FILES=(driver-ready toolkit-ready cuda-ready plugin-ready)
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

# round does one check; its status is that of ONCE above.
round() {
	local out rv alloc idx=-1 i=0 f
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
	alloc="${lines[1]:-0}"
	for ((i = 2; i < ${#lines[@]}; i++)); do
		if [[ "${lines[i]}" == "${STARTUP_TAINT_KEY}" ]]; then
			idx=$((i - 2))
			break
		fi
	done
	if ((idx < 0)); then
		return 0
	fi
	for f in "${VALIDATION_FILES[@]}"; do
		if [[ ! -e "${VALIDATIONS_DIR}/${f}" ]]; then
			log "waiting: ${VALIDATIONS_DIR}/${f} does not exist yet"
			return 3
		fi
	done
	[[ "${alloc}" =~ ^[0-9]+$ ]] || alloc=0
	if ((alloc < GPU_COUNT)); then
		log "waiting: nvidia.com/gpu allocatable is ${alloc}, want ${GPU_COUNT}"
		return 3
	fi
	local patch
	patch="$(printf '[{"op":"test","path":"/metadata/resourceVersion","value":"%s"},{"op":"test","path":"/spec/taints/%d/key","value":"%s"},{"op":"remove","path":"/spec/taints/%d"}]' \
		"${rv}" "${idx}" "${STARTUP_TAINT_KEY}" "${idx}")"
	if ! out="$(kubectl patch node "${NODE_NAME}" --request-timeout=20s --type=json -p "${patch}" 2>&1)"; then
		log "removing ${STARTUP_TAINT_KEY} failed (will read the node again): $(summary "${out}")"
		return 4
	fi
	log "GPUs validated (${alloc} allocatable); removed taint ${STARTUP_TAINT_KEY}"
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
