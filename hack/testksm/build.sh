#!/usr/bin/env bash
# build.sh builds kube-state-metrics, the exporter of Kubernetes objects'
# state that out/monitoring's rules read (Node taints and providerIDs,
# CertificateSigningRequests, CronJobs), for the system tests
# (internal/testing/systest) that run it against a real kube-apiserver
# beside a real Prometheus.
#
# Usage: hack/testksm/build.sh
#
# Environment:
#   KSM_VERSION         the release, default 2.20.0 (the one the tests pin),
#                       built as the Go module k8s.io/kube-state-metrics/v2
#                       at v$KSM_VERSION from the Go module proxy (go install
#                       MODULE@VERSION, with the module's own go.mod and
#                       go.sum).
#   NODEGEN_KSM_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/nodegen/ksm)
#
# The binary lands in <cache root>/<KSM_VERSION>/kube-state-metrics and is
# reused when present. The folder is filled atomically (built in a hidden
# sibling, renamed into place when its build information names the module
# at the version).
#
# Progress goes to stderr; the last line of stdout is the binary's path.
set -euo pipefail

KSM_VERSION="${KSM_VERSION:-2.20.0}"
module=k8s.io/kube-state-metrics/v2
log() { printf 'testksm: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

[[ $KSM_VERSION =~ ^2\.[0-9]+\.[0-9]+$ ]] || die "KSM_VERSION=$KSM_VERSION is not 2.MINOR.PATCH"
cache_root="${NODEGEN_KSM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodegen/ksm}"
final="$cache_root/$KSM_VERSION"
if [[ -x $final/kube-state-metrics ]]; then
	log "reusing $final/kube-state-metrics"
	printf '%s\n' "$final/kube-state-metrics"
	exit 0
fi
command -v go >/dev/null || die "go is not on PATH"

stage=""
cleanup() {
	local rc=$?
	[[ -z $stage ]] || rm -rf "$stage"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$cache_root"
find "$cache_root" -mindepth 1 -maxdepth 1 -name '.tmp-*' -mmin +720 -exec rm -rf {} + 2>/dev/null || true
stage="$(mktemp -d "$cache_root/.tmp-$KSM_VERSION.XXXXXX")"
log "compiling $module v$KSM_VERSION ($(go env GOVERSION)); the first build on a machine takes minutes"
started=$SECONDS
# Outside any module and workspace, with no flags of the caller's (go test's
# GOFLAGS hold test flags go install does not take).
(cd "$stage" && GOWORK=off GOFLAGS='' CGO_ENABLED=0 GOBIN="$stage" go install -trimpath -ldflags="-s -w" "$module@v$KSM_VERSION")
log "compiled in $((SECONDS - started))s"
[[ -x $stage/kube-state-metrics ]] || die "go install left no kube-state-metrics in $stage"
info="$(go version -m "$stage/kube-state-metrics")"
grep -q $'^\tmod\t'"$module"$'\tv'"$KSM_VERSION"$'\t' <<<"$info" || die "the binary is not $module v$KSM_VERSION:
$info"
if ! mv -T "$stage" "$final" 2>/dev/null; then
	# Another build won the race; its binary is the same.
	[[ -x $final/kube-state-metrics ]] || die "cannot move the build into $final"
fi
stage=""
printf '%s\n' "$final/kube-state-metrics"
