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

rc=0 changed=0 current=0 missing=0

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
	if ${dry_run}; then
		log "${changed} node(s) would be changed, ${current} already as their group says, ${missing} not joined"
	else
		log "${changed} node(s) changed, ${current} already as their group says, ${missing} not joined"
	fi
	exit "${rc}"
}
