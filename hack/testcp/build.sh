#!/usr/bin/env bash
# build.sh builds the kube-apiserver, kube-controller-manager and etcd binaries
# that internal/testing/testcp runs in tests. All are built from the Go module
# proxy (no prebuilt downloads), in throwaway wrapper modules under a temporary
# folder, so the project's go.mod and go.sum are never touched. kube-apiserver
# and kube-controller-manager come from one wrapper module (the same module
# graph) and one go build, so the packages they share are compiled once.
#
# Usage: hack/testcp/build.sh
#
# Environment:
#   K8S_VERSION           kube-apiserver and kube-controller-manager version (default v1.37.2)
#   ETCD_VERSION          etcd version (default v3.6.16)
#   NODEGEN_TESTCP_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/nodegen/testcp)
#
# The binaries land in <cache root>/k8s-<K8S_VERSION>-etcd-<ETCD_VERSION>/.
# A folder that already holds the three binaries is reused. A folder that
# holds kube-apiserver and etcd but not kube-controller-manager (made by an
# older build.sh) keeps them: only kube-controller-manager is built, into a
# hidden sibling folder, checked, and renamed into the folder. Otherwise the
# folder is filled atomically: the binaries are built into a hidden sibling
# folder that is renamed into place only when all are built and answer
# --version.
#
# Progress goes to stderr; the last line of stdout is the binaries' folder.
#
# Keep the default versions in step with KubernetesVersion and EtcdVersion in
# internal/testing/testcp/testcp.go (a unit test there checks this).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"

log() { printf 'testcp: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

[[ $K8S_VERSION == v* ]] || K8S_VERSION="v$K8S_VERSION"
[[ $ETCD_VERSION == v* ]] || ETCD_VERSION="v$ETCD_VERSION"

k8s_re='^v1\.([0-9]+)\.([0-9]+)(-[0-9A-Za-z.-]+)?$'
[[ $K8S_VERSION =~ $k8s_re ]] || die "K8S_VERSION=$K8S_VERSION is not a v1.MINOR.PATCH version"
k8s_minor="${BASH_REMATCH[1]}"
# The staging modules (k8s.io/api, k8s.io/apiserver, ...) of v1.X.Y are v0.X.Y.
staging_version="v0.${K8S_VERSION#v1.}"
etcd_re='^v3\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$'
[[ $ETCD_VERSION =~ $etcd_re ]] || die "ETCD_VERSION=$ETCD_VERSION is not a v3.MINOR.PATCH version"

cache_root="${NODEGEN_TESTCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodegen/testcp}"
name="k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
final="$cache_root/$name"

if [[ -x $final/kube-apiserver && -x $final/etcd && -x $final/kube-controller-manager ]]; then
	log "reusing cached binaries in $final"
	printf '%s\n' "$final"
	exit 0
fi
# Only kube-controller-manager is missing: keep the cached kube-apiserver and etcd.
only_kcm=0
if [[ -x $final/kube-apiserver && -x $final/etcd ]]; then
	only_kcm=1
fi

command -v go >/dev/null || die "go is not on PATH"

work=""  # temporary wrapper modules
stage="" # binaries being built; renamed to $final when complete
child="" # PID and process group of the go command running now

# Job control gives each background command its own process group, so that
# cleanup can stop a go command together with the compilers it started.
set -m

cleanup() {
	local rc=$?
	if [[ -n $child ]]; then
		# SIGTERM, as go build keeps building on SIGINT. Its $WORK folder is
		# under $work (GOTMPDIR), so it is removed below.
		kill -TERM -- "-$child" 2>/dev/null || true
		for _ in {1..50}; do
			kill -0 -- "-$child" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL -- "-$child" 2>/dev/null || true
	fi
	[[ -z $work ]] || rm -rf "$work"
	[[ -z $stage ]] || rm -rf "$stage"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run runs a command in the background and waits for it, so that a signal
# sent to this script is handled at once instead of after a long go build.
# It returns the command's status, also where set -e does not apply (if !).
run() {
	local rc=0
	"$@" &
	child=$!
	wait "$child" || rc=$?
	child=""
	return "$rc"
}

# The wrapper modules must not see a go.work or vendor folder, need no C
# compiler, and build static binaries as the upstream release builds do.
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GO111MODULE=on

mkdir -p "$cache_root"
# Remove hidden leftovers of builds that were killed too hard to clean up.
find "$cache_root" -mindepth 1 -maxdepth 1 -name '.tmp-*' -mmin +720 -exec rm -rf {} + 2>/dev/null || true
stage="$(mktemp -d "$cache_root/.tmp-$name.XXXXXX")"
work="$(mktemp -d "${TMPDIR:-/tmp}/nodegen-testcp.XXXXXX")"
mkdir "$work/gotmp"
export GOTMPDIR="$work/gotmp"

if ((only_kcm)); then
	log "building kube-controller-manager $K8S_VERSION into $final, beside its cached kube-apiserver and etcd ($(go env GOVERSION))"
else
	log "building kube-apiserver and kube-controller-manager $K8S_VERSION and etcd $ETCD_VERSION into $final ($(go env GOVERSION))"
fi

# kube-apiserver and kube-controller-manager, in one wrapper module.
# k8s.io/kubernetes replaces each staging module with a local
# folder (k8s.io/api => ./staging/src/k8s.io/api); a wrapper module has to
# replace each of them with its published v0.X.Y instead. The list comes from
# that version's own go.mod. k8s.io/sample-* are not needed and some are not
# published.
mkdir "$work/kubernetes"
cd "$work/kubernetes"
log "downloading k8s.io/kubernetes@$K8S_VERSION"
if ! run go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >"$work/kubernetes.json"; then
	die "cannot download k8s.io/kubernetes@$K8S_VERSION: $(sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' "$work/kubernetes.json")"
fi
k8s_gomod="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' "$work/kubernetes.json")"
[[ -f $k8s_gomod ]] || die "no go.mod path for k8s.io/kubernetes@$K8S_VERSION in: $(cat "$work/kubernetes.json")"

mapfile -t staged < <(
	awk '{
		sub(/^[ \t]*replace[ \t]+/, "")
		for (i = 1; i <= NF && $i != "=>"; i++) {}
		if (i < NF && $1 ~ /^k8s\.io\// && $1 !~ /^k8s\.io\/sample-/ && $(i + 1) ~ /^\.\/staging\//) print $1
	}' "$k8s_gomod" | sort -u
)
((${#staged[@]} > 0)) || die "found no ./staging replace directives in $k8s_gomod"
log "replacing ${#staged[@]} staging modules with $staging_version"

edits=(-require="k8s.io/kubernetes@$K8S_VERSION" -tool=k8s.io/kubernetes/cmd/kube-apiserver -tool=k8s.io/kubernetes/cmd/kube-controller-manager)
for m in "${staged[@]}"; do
	edits+=(-replace="$m=$m@$staging_version")
done
run go mod init local/testcp/kubernetes
run go mod edit "${edits[@]}"
log "resolving kube-apiserver and kube-controller-manager dependencies"
run go mod tidy

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor -X $pkg.gitTreeState=clean"
done
k8s_cmds=(k8s.io/kubernetes/cmd/kube-controller-manager)
((only_kcm)) || k8s_cmds=(k8s.io/kubernetes/cmd/kube-apiserver "${k8s_cmds[@]}")
# One go build for both commands: each package they share is compiled once,
# and one command links while the other's packages still compile.
compile_started=$SECONDS
log "compiling ${k8s_cmds[*]##*/} (the long part: several minutes on 2 cores)"
run go build -trimpath -ldflags="$ldflags" -o "$stage/" "${k8s_cmds[@]}"
log "compiled in $((SECONDS - compile_started))s"
got="$("$stage/kube-controller-manager" --version)"
[[ $got == "Kubernetes $K8S_VERSION" ]] || die "kube-controller-manager --version says '$got', want 'Kubernetes $K8S_VERSION'"

if ((only_kcm)); then
	cd "$cache_root"
	chmod 755 "$stage/kube-controller-manager"
	# A rename within the cache root: the binary appears whole or not at all.
	mv -f "$stage/kube-controller-manager" "$final/kube-controller-manager" ||
		die "cannot move kube-controller-manager into $final"
	log "done in ${SECONDS}s: $(du -h "$final/kube-controller-manager" | cut -f1) kube-controller-manager added to $final"
	printf '%s\n' "$final"
	exit 0
fi

# etcd. Its module builds as a plain dependency; no replace directives needed.
mkdir "$work/etcd"
cd "$work/etcd"
run go mod init local/testcp/etcd
run go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" -tool=go.etcd.io/etcd/server/v3
log "resolving etcd dependencies"
run go mod tidy
log "compiling etcd"
run go build -trimpath -ldflags="-s -w" -o "$stage/etcd" go.etcd.io/etcd/server/v3
cd "$cache_root"

# Check that what was built is what was asked for before publishing it.
got="$("$stage/kube-apiserver" --version)"
[[ $got == "Kubernetes $K8S_VERSION" ]] || die "kube-apiserver --version says '$got', want 'Kubernetes $K8S_VERSION'"
got="$("$stage/etcd" --version)"
[[ $got == *"etcd Version: ${ETCD_VERSION#v}"* ]] || die "etcd --version says '$got', want version ${ETCD_VERSION#v}"

chmod 755 "$stage"
if [[ ! -x $final/kube-apiserver || ! -x $final/etcd || ! -x $final/kube-controller-manager ]]; then
	rm -rf "$final" # an incomplete folder left by hand, if any
	# -T: fail rather than move into a folder that a concurrent build just made.
	mv -T "$stage" "$final" 2>/dev/null && stage=""
fi
[[ -x $final/kube-apiserver && -x $final/etcd && -x $final/kube-controller-manager ]] || die "cannot rename $stage to $final"
[[ -z $stage ]] || log "another build finished first; using its binaries"

log "done in ${SECONDS}s: $(du -h "$final/kube-apiserver" | cut -f1) kube-apiserver, $(du -h "$final/kube-controller-manager" | cut -f1) kube-controller-manager, $(du -h "$final/etcd" | cut -f1) etcd"
printf '%s\n' "$final"
