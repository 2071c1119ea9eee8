# shellcheck shell=bash
# Gives the declared nodes of the onprem groups the labels and taints their
# group says, on Nodes that joined without them (kubeadm gives an on-prem
# node none of them unless its JoinConfiguration does). The lines nodegen
# writes below this file call node once per declared node:
#
#   node NAME GROUP [KEY=VALUE ...] -- [KEY=VALUE:EFFECT ...]
#
# A label or taint the Node already has with the same value is left as it
# is; one with another value is replaced (--overwrite); labels and taints
# the group does not name are never removed. A declared node that has not
# joined is reported and skipped: run the script again once it joined.
# Running it again changes nothing on the nodes it already changed.
#
# Before it taints a Node (and with --dry-run, instead), it lists the pods
# running there that do not tolerate a taint it adds: with NoSchedule they
# keep running but no pod like them (another team's job, a DaemonSet's
# pod) schedules there again; with NoExecute they are evicted. Add the
# toleration to their workloads first, or move them, then run it.
#
# Usage: label-onprem-nodes.sh [--dry-run]   (kubectl's current context)
# Exit status: 0 when every declared node that has joined carries its
# group's labels and taints afterwards (or would, with --dry-run), 1
# otherwise.
set -euo pipefail

dry_run=false
case "${1-}" in
"") ;;
--dry-run) dry_run=true ;;
*)
	printf 'usage: %s [--dry-run]\n' "${0##*/}" >&2
	exit 2
	;;
esac

log() { printf 'label-onprem-nodes: %s\n' "$*"; }

rc=0 changed=0 current=0 missing=0 intolerant_pods=0

# tolerates TAINT [KEY|OPERATOR|VALUE|EFFECT ...]: one of the pod's
# tolerations matches TAINT (KEY=VALUE:EFFECT), as the scheduler matches
# them (kubernetes v1.37.2 staging/src/k8s.io/api/core/v1/toleration.go
# ToleratesTaint: an empty effect matches every effect; Exists matches any
# value, and with an empty key every taint; Equal, or no operator, the
# same key and value).
tolerates() {
	local taint="$1" tol
	shift
	local tkey="${taint%%=*}" rest="${taint#*=}"
	local tvalue="${rest%:*}" teffect="${rest##*:}"
	for tol in "$@"; do
		local key op value effect
		IFS='|' read -r key op value effect <<<"${tol}"
		# kubectl's go-template prints a field the toleration leaves out
		# as "<no value>".
		[[ "${key}" != '<no value>' ]] || key=""
		[[ "${op}" != '<no value>' ]] || op=""
		[[ "${value}" != '<no value>' ]] || value=""
		[[ "${effect}" != '<no value>' ]] || effect=""
		[[ -z "${effect}" || "${effect}" == "${teffect}" ]] || continue
		case "${op}" in
		Exists) [[ -z "${key}" || "${key}" == "${tkey}" ]] && return 0 ;;
		Equal | "") [[ "${key}" == "${tkey}" && "${value}" == "${tvalue}" ]] && return 0 ;;
		esac
	done
	return 1
}

# intolerant NAME TAINT...: logs each pod running on Node NAME (not
# finished) that does not tolerate one of the taints, and counts them.
intolerant() {
	local name="$1"
	shift
	local pods line
	# One line per pod: namespace/name, then its tolerations as
	# key|operator|value|effect, tab-separated.
	# shellcheck disable=SC2016 # a go-template for kubectl, not the shell
	if ! pods="$(kubectl get pods --all-namespaces --request-timeout=30s \
		--field-selector "spec.nodeName=${name},status.phase!=Succeeded,status.phase!=Failed" \
		-o 'go-template={{range .items}}{{.metadata.namespace}}/{{.metadata.name}}{{range .spec.tolerations}}{{"\t"}}{{.key}}|{{.operator}}|{{.value}}|{{.effect}}{{end}}{{"\n"}}{{end}}')"; then
		log "node ${name}: listing its pods failed"
		rc=1
		return
	fi
	while IFS= read -r line; do
		[[ -n "${line}" ]] || continue
		local -a fields
		IFS=$'\t' read -r -a fields <<<"${line}"
		local pod="${fields[0]}" t
		for t in "$@"; do
			if ! tolerates "${t}" "${fields[@]:1}"; then
				case "${t##*:}" in
				NoExecute) log "node ${name}: pod ${pod} does not tolerate ${t}: it would be evicted" ;;
				*) log "node ${name}: pod ${pod} does not tolerate ${t}: it keeps running, but no pod like it schedules here again" ;;
				esac
				intolerant_pods=$((intolerant_pods + 1))
			fi
		done
	done <<<"${pods}"
}

# node NAME GROUP [KEY=VALUE ...] -- [KEY=VALUE:EFFECT ...]
node() {
	local name="$1" group="$2"
	shift 2
	local -a labels=() taints=()
	while (($#)) && [[ "$1" != -- ]]; do
		labels+=("$1")
		shift
	done
	shift
	taints=("$@")

	if [[ -z "$(kubectl get node "${name}" --request-timeout=30s --ignore-not-found -o name)" ]]; then
		log "node ${name} (group ${group}): not in the cluster yet; run this again once it joined"
		missing=$((missing + 1))
		return
	fi
	# The Node's labels (key=value) and taints (key=value:effect), one a
	# line.
	local have
	# shellcheck disable=SC2016 # a go-template for kubectl, not the shell
	if ! have="$(kubectl get node "${name}" --request-timeout=30s \
		-o 'go-template={{range $k, $v := .metadata.labels}}{{$k}}={{$v}}{{"\n"}}{{end}}{{range .spec.taints}}{{.key}}={{.value}}:{{.effect}}{{"\n"}}{{end}}')"; then
		log "node ${name}: reading it failed"
		rc=1
		return
	fi
	local -a want_labels=() want_taints=()
	local l t
	for l in "${labels[@]}"; do
		grep -qxF -- "${l}" <<<"${have}" || want_labels+=("${l}")
	done
	for t in "${taints[@]}"; do
		grep -qxF -- "${t}" <<<"${have}" || want_taints+=("${t}")
	done
	if ((${#want_labels[@]} + ${#want_taints[@]} == 0)); then
		current=$((current + 1))
		return
	fi
	((${#want_taints[@]} == 0)) || intolerant "${name}" "${want_taints[@]}"
	if ${dry_run}; then
		((${#want_labels[@]} == 0)) || log "node ${name} (group ${group}): would label ${want_labels[*]}"
		((${#want_taints[@]} == 0)) || log "node ${name} (group ${group}): would taint ${want_taints[*]}"
		changed=$((changed + 1))
		return
	fi
	if ((${#want_labels[@]})) && ! kubectl label node "${name}" --request-timeout=30s --overwrite "${want_labels[@]}" >/dev/null; then
		log "node ${name}: labelling it ${want_labels[*]} failed"
		rc=1
		return
	fi
	if ((${#want_taints[@]})) && ! kubectl taint node "${name}" --request-timeout=30s --overwrite "${want_taints[@]}" >/dev/null; then
		log "node ${name}: tainting it ${want_taints[*]} failed"
		rc=1
		return
	fi
	((${#want_labels[@]} == 0)) || log "node ${name} (group ${group}): labelled ${want_labels[*]}"
	((${#want_taints[@]} == 0)) || log "node ${name} (group ${group}): tainted ${want_taints[*]}"
	changed=$((changed + 1))
}

# finish reports what the calls above did and exits.
finish() {
	((intolerant_pods == 0)) || log "${intolerant_pods} running pod(s) do not tolerate a taint added (listed above): add the toleration to their workloads, or move them, before the taints take effect"
	if ${dry_run}; then
		log "${changed} node(s) would be changed, ${current} already as their group says, ${missing} not joined"
	else
		log "${changed} node(s) changed, ${current} already as their group says, ${missing} not joined"
	fi
	exit "${rc}"
}
