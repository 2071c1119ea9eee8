#!/usr/bin/env bash
# Keeps the kubeadm join token in Secret Manager valid, so that VMs the
# Cluster Autoscaler creates at any time can join. Each run:
#
#  1. creates a fresh bootstrap token: a Secret bootstrap-token-<id> in
#     kube-system (type bootstrap.kubernetes.io/token, expiring TOKEN_TTL_SECONDS
#     from now, in the group TOKEN_GROUP, labelled as the renewer's), its
#     secret half read from /dev/urandom;
#  2. adds it as a new version of the Secret Manager secret the VMs read
#     ("latest"), authenticated as the node VM's service account through the
#     metadata server; if that fails, deletes the Secret it created and fails;
#  3. retires what VMs no longer read: every enabled version other than the
#     newest that was superseded (a newer version added) more than
#     GRACE_SECONDS ago (the longest time a VM takes to join, plus a margin).
#     It reads the version's token id, deletes that token's Secret (only the
#     renewer's own tokens; others are left to expire), then disables the
#     version.
#
# The token is never logged and never on a command line: it goes to kubectl
# and curl in files of a private temporary folder, removed on exit. Exit
# status: 0 renewed and cleaned up; 1 no new token (nothing left behind), or
# the new token is published but cleaning up failed (retried next run).
#
# Runs in the nodegen-join-token-renewer CronJob, on the autoscaler's
# dedicated cloud node, with kubectl (in-cluster ServiceAccount, or KUBECONFIG)
# and curl.
#
# Environment:
#   PROJECT_ID          GCP project of the secret
#   SECRET_NAME         Secret Manager secret (not the full resource name)
#   TOKEN_TTL_SECONDS   lifetime of each token
#   GRACE_SECONDS       how long a superseded version stays enabled
#   TOKEN_LABEL_KEY     label marking the renewer's tokens, and its value
#   TOKEN_LABEL_VALUE
#   TOKEN_GROUP         the tokens' bootstrap group (auth-extra-groups): the
#                       cloud join path's, whose CSRs the node CSR approver
#                       decides, not kubeadm's auto-approved one
set -euo pipefail

: "${PROJECT_ID:?PROJECT_ID is required}"
: "${SECRET_NAME:?SECRET_NAME is required}"
: "${TOKEN_TTL_SECONDS:?TOKEN_TTL_SECONDS is required}"
: "${GRACE_SECONDS:?GRACE_SECONDS is required}"
: "${TOKEN_LABEL_KEY:?TOKEN_LABEL_KEY is required}"
: "${TOKEN_LABEL_VALUE:?TOKEN_LABEL_VALUE is required}"
: "${TOKEN_GROUP:?TOKEN_GROUP is required}"
readonly METADATA_URL=http://metadata.google.internal/computeMetadata/v1
readonly SECRET_MANAGER_URL=https://secretmanager.googleapis.com/v1
readonly NAMESPACE=kube-system
readonly NODE_GROUP="${TOKEN_GROUP}"
readonly SECRET_PATH="projects/${PROJECT_ID}/secrets/${SECRET_NAME}"

WORK="$(mktemp -d)"
readonly WORK
chmod 700 "${WORK}"
created=""   # name of the token Secret this run created
published=0  # 1 once its Secret Manager version exists

log() { printf '%s join-token-renewer: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }

# shellcheck disable=SC2317 # run by the EXIT trap
on_exit() {
	local rc=$? deleted=0
	if [[ -n "${created}" && "${published}" == 0 ]]; then
		delete_token "${created}" || deleted=$?
		if ((deleted == 0 || deleted == 2)); then
			log "deleted ${created}: its token was never published"
		else
			log "ERROR: could not delete ${created}, whose token was never published; it expires at ${expiration}"
		fi
	fi
	rm -rf "${WORK}"
	exit "${rc}"
}
trap on_exit EXIT

# random N prints N characters drawn uniformly from [a-z0-9] (/dev/urandom,
# rejecting the bytes outside the set).
random() {
	local out="" chunk
	while ((${#out} < $1)); do
		chunk="$(head -c 256 /dev/urandom | LC_ALL=C tr -dc 'a-z0-9')"
		out+="${chunk}"
	done
	printf '%s' "${out:0:$1}"
}

b64() { printf '%s' "$1" | base64 | tr -d '\n'; }

# epoch TIME prints the Unix time of an RFC 3339 UTC time
# (2006-01-02T15:04:05[.999999999]Z).
epoch() {
	local t="${1%Z}"
	t="${t%%.*}"
	date -u -d "${t/T/ }" +%s
}

# json_field FIELD prints the string value of FIELD in the JSON on stdin
# (the last one, where FIELD occurs more than once).
json_field() {
	tr -d '\n' | sed -n 's/.*"'"$1"'"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p'
}

# summary prints the last line of an error output (kubectl's one-line
# summary after any client-go log lines).
summary() {
	local s
	s="$(cat)"
	s="${s%$'\n'}"
	printf '%s' "${s##*$'\n'}"
}

# urlencode S percent-encodes S for a query parameter.
urlencode() {
	local s="$1" out="" c i
	for ((i = 0; i < ${#s}; i++)); do
		c="${s:i:1}"
		case "${c}" in
		[A-Za-z0-9._~-]) out+="${c}" ;;
		*) out+="$(printf '%%%02X' "'${c}")" ;;
		esac
	done
	printf '%s' "${out}"
}

# access_token reads the VM service account's OAuth access token from the
# metadata server into the curl header file ${WORK}/auth.
access_token() {
	local token
	token="$(curl --silent --show-error --fail --max-time 10 \
		--retry 5 --retry-delay 1 --retry-connrefused \
		--header 'Metadata-Flavor: Google' \
		"${METADATA_URL}/instance/service-accounts/default/token" | json_field access_token)" || return 1
	[[ -n "${token}" ]] || return 1
	printf 'Authorization: Bearer %s\n' "${token}" >"${WORK}/auth"
}

# sm METHOD PATH [BODY_FILE] calls the Secret Manager API and prints the
# response; on an HTTP error it logs the status and message and fails.
sm() {
	local method="$1" path="$2" code
	local -a args=(--silent --show-error --max-time 30 --retry 2 --retry-delay 1 --retry-connrefused
		--header "@${WORK}/auth" --request "${method}" --output "${WORK}/response" --write-out '%{http_code}')
	if (($# > 2)); then
		args+=(--header 'Content-Type: application/json' --data-binary "@$3")
	fi
	if ! code="$(curl "${args[@]}" "${SECRET_MANAGER_URL}/${path}" 2>"${WORK}/curl-error")"; then
		log "Secret Manager ${method} ${path}: $(summary <"${WORK}/curl-error")"
		return 1
	fi
	if [[ "${code}" != 2?? ]]; then
		log "Secret Manager ${method} ${path}: HTTP ${code}: $(json_field message <"${WORK}/response")"
		return 1
	fi
	cat "${WORK}/response"
}

# delete_token NAME deletes the token Secret NAME; status 0 deleted,
# 2 not found, 3 forbidden (not the renewer's), 1 any other error.
delete_token() {
	if kubectl delete --raw "/api/v1/namespaces/${NAMESPACE}/secrets/$1" >/dev/null 2>"${WORK}/kubectl-error"; then
		return 0
	fi
	case "$(summary <"${WORK}/kubectl-error")" in
	*"(NotFound)"*) return 2 ;;
	*"(Forbidden)"*) return 3 ;;
	esac
	log "deleting $1: $(summary <"${WORK}/kubectl-error")"
	return 1
}

# versions prints the secret's versions, one "NUMBER CREATED_EPOCH STATE"
# line each, sorted by number. Each version object has one name, createTime
# and state, in any order: a version is complete when it has all three.
versions() {
	local page="" query line key value num="" created="" state=""
	: >"${WORK}/versions"
	while true; do
		query="pageSize=100"
		[[ -z "${page}" ]] || query+="&pageToken=$(urlencode "${page}")"
		sm GET "${SECRET_PATH}/versions?${query}" >"${WORK}/page" || return 1
		page=""
		while IFS= read -r line; do
			key="${line%%\"*}"
			value="${line#*\"}"
			case "${key}" in
			name) num="${value##*/}" ;;
			createTime) created="$(epoch "${value}")" ;;
			state) state="${value}" ;;
			nextPageToken) page="${value}" ;;
			esac
			if [[ -n "${num}" && -n "${created}" && -n "${state}" ]]; then
				printf '%s %s %s\n' "${num}" "${created}" "${state}" >>"${WORK}/versions"
				num="" created="" state=""
			fi
		done < <(tr -d '\n' <"${WORK}/page" |
			grep -oE '"(name|createTime|state|nextPageToken)"[[:space:]]*:[[:space:]]*"[^"]*"' |
			sed -E 's/^"([a-zA-Z]+)"[[:space:]]*:[[:space:]]*"([^"]*)"$/\1"\2/')
		[[ -n "${page}" ]] || break
	done
	if [[ -n "${num}${created}${state}" ]]; then
		log "a version in the list lacks its name, createTime or state"
		return 1
	fi
	sort -n -k1,1 "${WORK}/versions"
}

# retire NUMBER deletes the token of version NUMBER (if the renewer made
# it) and disables the version. It fails, leaving the version enabled for
# the next run, when the token's Secret could not be deleted.
retire() {
	local v="$1" data id rc=0
	data="$(sm GET "${SECRET_PATH}/versions/${v}:access" | json_field data)" || return 1
	id="$(printf '%s' "${data}" | base64 -d 2>/dev/null | cut -c1-6)" || id=""
	if [[ "${id}" =~ ^[a-z0-9]{6}$ ]]; then
		delete_token "bootstrap-token-${id}" || rc=$?
		case "${rc}" in
		0) log "deleted token ${id} of version ${v}" ;;
		2) log "token ${id} of version ${v} no longer exists" ;;
		3) log "token ${id} of version ${v} is not the renewer's; left to expire" ;;
		*) return 1 ;;
		esac
	else
		log "version ${v} holds no bootstrap token"
	fi
	printf '{}' >"${WORK}/disable.json"
	sm POST "${SECRET_PATH}/versions/${v}:disable" "${WORK}/disable.json" >/dev/null || return 1
	log "disabled version ${v}"
}

main() {
	local now id secret version failed=0
	access_token || {
		log "ERROR: the metadata server gave no access token for the VM's service account"
		exit 1
	}

	now="$(date -u +%s)"
	expiration="$(date -u -d "@$((now + TOKEN_TTL_SECONDS))" +%Y-%m-%dT%H:%M:%SZ)"
	id="$(random 6)"
	secret="$(random 16)"
	cat >"${WORK}/secret.json" <<EOF
{"apiVersion":"v1","kind":"Secret","type":"bootstrap.kubernetes.io/token",
 "metadata":{"name":"bootstrap-token-${id}","namespace":"${NAMESPACE}","labels":{"${TOKEN_LABEL_KEY}":"${TOKEN_LABEL_VALUE}"}},
 "data":{"token-id":"$(b64 "${id}")","token-secret":"$(b64 "${secret}")","expiration":"$(b64 "${expiration}")",
  "usage-bootstrap-authentication":"$(b64 true)","usage-bootstrap-signing":"$(b64 true)",
  "auth-extra-groups":"$(b64 "${NODE_GROUP}")","description":"$(b64 "nodegen join-token renewer")"}}
EOF
	if ! kubectl create --raw "/api/v1/namespaces/${NAMESPACE}/secrets" -f "${WORK}/secret.json" >/dev/null 2>"${WORK}/kubectl-error"; then
		log "ERROR: creating token ${id}: $(summary <"${WORK}/kubectl-error")"
		exit 1
	fi
	created="bootstrap-token-${id}"
	log "created token ${id}, expiring at ${expiration}"

	printf '{"payload":{"data":"%s"}}' "$(b64 "${id}.${secret}")" >"${WORK}/version.json"
	version="$(sm POST "${SECRET_PATH}:addVersion" "${WORK}/version.json" | json_field name)" || {
		log "ERROR: adding token ${id} to Secret Manager secret ${SECRET_PATH} failed"
		exit 1
	}
	rm -f "${WORK}/version.json" "${WORK}/secret.json"
	published=1
	log "added token ${id} as version ${version##*/} of ${SECRET_PATH}"

	local -a nums=() times=() states=()
	local n t s i
	if ! versions >"${WORK}/sorted"; then
		log "ERROR: listing the versions of ${SECRET_PATH} failed; nothing retired (the next run retries)"
		exit 1
	fi
	while read -r n t s; do
		nums+=("${n}") times+=("${t}") states+=("${s}")
	done <"${WORK}/sorted"
	now="$(date -u +%s)"
	for ((i = 0; i + 1 < ${#nums[@]}; i++)); do
		# Superseded when the next version was added.
		[[ "${states[i]}" == ENABLED && "${times[i + 1]}" =~ ^[0-9]+$ ]] || continue
		if ((times[i + 1] + GRACE_SECONDS > now)); then
			continue
		fi
		retire "${nums[i]}" || {
			log "ERROR: could not retire version ${nums[i]}; the next run retries"
			failed=1
		}
	done
	exit "${failed}"
}

main "$@"
