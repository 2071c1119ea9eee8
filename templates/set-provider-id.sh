# shellcheck shell=bash disable=SC2154 # CLOUD_GROUPS and PREFIX are set by the lines nodegen writes above this file.
# Gives every Node outside the cloud groups' MIGs (the kubeadm control
# plane, the on-prem workers) that has no providerID the providerID
# PREFIX<node name>.
#
# The Cluster Autoscaler's GCE provider fails on a Node without a providerID
# it can parse, and the releases up to v1.36.1 then stop scaling, up and
# down, for as long as such a Node exists. It parses this one and maps it to
# no node group: the project is no GCE project and the zone no GCE zone.
#
# spec.providerID can be set once, on a Node that has none, and never
# changed: the script never touches a Node that has one, and a Node that got
# one meanwhile makes the API server refuse the patch. A Node labelled with
# one of CLOUD_GROUPS but without a providerID is a cloud VM whose join went
# wrong: it is reported and left alone (its providerID must name its VM).
# Running the script again changes nothing.
#
# Usage: set-provider-id.sh [--dry-run]   (kubectl's current context)
# Exit status: 0 when every Node has a providerID afterwards (or would, with
# --dry-run), 1 otherwise.
set -euo pipefail

readonly NAME_RE='^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'

dry_run=false
case "${1-}" in
"") ;;
--dry-run) dry_run=true ;;
*)
	printf 'usage: %s [--dry-run]\n' "${0##*/}" >&2
	exit 2
	;;
esac

log() { printf 'set-provider-id: %s\n' "$*"; }

main() {
	local -A cloud=()
	local g
	local -a groups
	IFS=, read -ra groups <<<"${CLOUD_GROUPS}"
	for g in "${groups[@]}"; do
		cloud["${g}"]=1
	done

	# One line per Node: name, providerID, group label, each ended by 0x1f
	# (unit separator), which no field can hold.
	local sep=$'\x1f' nodes
	local fmt='{range .items[*]}{.metadata.name}{"\x1f"}{.spec.providerID}{"\x1f"}{.metadata.labels.nodegen\.dev/node-group}{"\x1f"}{"\n"}{end}'
	nodes="$(kubectl get nodes --request-timeout=30s -o "jsonpath=${fmt}")"

	local line name pid group rc=0 set=0 kept=0
	local -a f
	while IFS= read -r line; do
		[[ -n "${line}" ]] || continue
		IFS="${sep}" read -ra f <<<"${line}"
		name="${f[0]}" pid="${f[1]-}" group="${f[2]-}"
		if [[ -n "${pid}" ]]; then
			kept=$((kept + 1))
			continue
		fi
		if [[ -n "${group}" && -n "${cloud["${group}"]+x}" ]]; then
			log "node ${name}: in cloud group ${group} but without providerID; left alone (it must join with its VM's gce://<project>/<zone>/<name>)"
			rc=1
			continue
		fi
		if [[ ! "${name}" =~ ${NAME_RE} ]]; then
			log "node ${name@Q}: not a DNS subdomain name; left alone"
			rc=1
			continue
		fi
		if ${dry_run}; then
			log "node ${name}: would set providerID ${PREFIX}${name}"
			set=$((set + 1))
			continue
		fi
		if ! kubectl patch node "${name}" --request-timeout=30s --type=merge \
			-p "{\"spec\":{\"providerID\":\"${PREFIX}${name}\"}}" >/dev/null; then
			log "node ${name}: setting providerID ${PREFIX}${name} failed"
			rc=1
			continue
		fi
		log "node ${name}: providerID ${PREFIX}${name}"
		set=$((set + 1))
	done <<<"${nodes}"
	if ${dry_run}; then
		log "${set} node(s) would be given a providerID, ${kept} already have one"
	else
		log "${set} node(s) given a providerID, ${kept} already had one"
	fi
	return "${rc}"
}

main
