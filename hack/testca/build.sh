#!/usr/bin/env bash
# build.sh builds the Cluster Autoscaler binary (GCE provider only, -tags gce)
# from kubernetes/autoscaler's source at a release tag, optionally with one
# patch applied, for the system tests (internal/testing/systest) that run it
# against a real kube-apiserver and a fake Compute API.
#
# Usage: hack/testca/build.sh [--patch FILE]
#
# Environment:
#   NODEGEN_CA_SOURCE  where the source comes from, one of:
#                        - a folder: kubernetes/autoscaler's cluster-autoscaler/
#                          folder at the tag;
#                        - a .tar.gz of that folder (one top folder inside);
#                        - a git URL (https://github.com/kubernetes/autoscaler.git):
#                          a shallow clone of tag cluster-autoscaler-$CA_VERSION,
#                          where the network allows it.
#                      Unset: exit 3 with a message naming the variable.
#   CA_VERSION         the release, default 1.35.2 (the tag the tests pin);
#                      the source's version/version.go must say the same.
#   NODEGEN_CA_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/nodegen/ca)
#
# The module proxy serves every dependency of the autoscaler's go.mod, not the
# autoscaler's own module, so it is built in its source folder.
#
# The binary lands in <cache root>/<CA_VERSION>-<key>/cluster-autoscaler, where
# key is "stock" or the first 16 hex digits of the patch's SHA-256, and is
# reused when present. The folder is filled atomically (built in a hidden
# sibling, renamed into place when its build information names the
# autoscaler's module and the gce tag).
#
# Progress goes to stderr; the last line of stdout is the binary's path.
set -euo pipefail

CA_VERSION="${CA_VERSION:-1.35.2}"
log() { printf 'testca: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

patch=""
while (($# > 0)); do
	case $1 in
	--patch)
		(($# >= 2)) || die "--patch needs a file"
		patch="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
		[[ -f $patch ]] || die "no patch file $2"
		shift 2
		;;
	*) die "unknown argument $1 (usage: build.sh [--patch FILE])" ;;
	esac
done

[[ $CA_VERSION =~ ^1\.[0-9]+\.[0-9]+$ ]] || die "CA_VERSION=$CA_VERSION is not 1.MINOR.PATCH"
key=stock
if [[ -n $patch ]]; then
	# The diff alone (from its first "--- " line, all git apply reads): a
	# header above it does not make another build.
	key="patch-$(sed -n '/^--- /,$p' "$patch" | sha256sum | cut -c1-16)"
fi
cache_root="${NODEGEN_CA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodegen/ca}"
name="$CA_VERSION-$key"
final="$cache_root/$name"
if [[ -x $final/cluster-autoscaler ]]; then
	log "reusing $final/cluster-autoscaler"
	printf '%s\n' "$final/cluster-autoscaler"
	exit 0
fi

source="${NODEGEN_CA_SOURCE:-}"
if [[ -z $source ]]; then
	log "NODEGEN_CA_SOURCE is not set: set it to kubernetes/autoscaler's cluster-autoscaler/ folder at tag cluster-autoscaler-$CA_VERSION, a .tar.gz of it, or https://github.com/kubernetes/autoscaler.git to clone the tag"
	exit 3
fi
command -v go >/dev/null || die "go is not on PATH"

work=""
stage=""
cleanup() {
	local rc=$?
	[[ -z $work ]] || rm -rf "$work"
	[[ -z $stage ]] || rm -rf "$stage"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

work="$(mktemp -d "${TMPDIR:-/tmp}/nodegen-testca.XXXXXX")"
src="$work/src"
case $source in
https://* | git@* | file://*)
	log "cloning tag cluster-autoscaler-$CA_VERSION of $source"
	git clone --quiet --depth 1 --branch "cluster-autoscaler-$CA_VERSION" "$source" "$work/repo" ||
		die "cannot clone tag cluster-autoscaler-$CA_VERSION of $source"
	mv "$work/repo/cluster-autoscaler" "$src"
	;;
*.tar.gz | *.tgz)
	[[ -f $source ]] || die "NODEGEN_CA_SOURCE=$source: no such file"
	mkdir "$work/x"
	tar -xzf "$source" -C "$work/x"
	tops=("$work"/x/*)
	if ((${#tops[@]} != 1)) || [[ ! -d ${tops[0]} ]]; then
		die "$source holds ${#tops[@]} top-level entries, want one folder"
	fi
	mv "${tops[0]}" "$src"
	;;
*)
	[[ -d $source ]] || die "NODEGEN_CA_SOURCE=$source is neither a folder, a .tar.gz nor a git URL"
	cp -R "$source" "$src"
	;;
esac
[[ -f $src/go.mod && -f $src/version/version.go ]] || die "$source is not the cluster-autoscaler/ folder (no go.mod or version/version.go)"
got="$(sed -n 's/^const ClusterAutoscalerVersion = "\(.*\)"$/\1/p' "$src/version/version.go")"
[[ $got == "$CA_VERSION" ]] || die "$source is version '$got', want $CA_VERSION"

if [[ -n $patch ]]; then
	log "applying $(basename "$patch")"
	# git apply works on plain folders; --check first so that nothing is half-applied.
	(cd "$src" && git apply --check "$patch" && git apply "$patch") || die "the patch does not apply to $CA_VERSION"
fi

mkdir -p "$cache_root"
find "$cache_root" -mindepth 1 -maxdepth 1 -name '.tmp-*' -mmin +720 -exec rm -rf {} + 2>/dev/null || true
stage="$(mktemp -d "$cache_root/.tmp-$name.XXXXXX")"
log "compiling cluster-autoscaler $CA_VERSION ($key, -tags gce, $(go env GOVERSION)); the first build on a machine takes several minutes"
started=$SECONDS
(cd "$src" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -tags gce -ldflags="-s -w" -o "$stage/cluster-autoscaler" .)
log "compiled in $((SECONDS - started))s"
# The binary has no --version flag; its build information says what it is.
info="$(go version -m "$stage/cluster-autoscaler")"
grep -q $'^\tpath\tk8s.io/autoscaler/cluster-autoscaler$' <<<"$info" || die "the binary is not k8s.io/autoscaler/cluster-autoscaler"
grep -q $'^\tbuild\t-tags=gce$' <<<"$info" || die "the binary was not built with -tags gce"
chmod 755 "$stage/cluster-autoscaler"
if ! mv -T "$stage" "$final" 2>/dev/null; then
	# Another build won the race; its binary is the same.
	[[ -x $final/cluster-autoscaler ]] || die "cannot move the build into $final"
fi
stage=""
printf '%s\n' "$final/cluster-autoscaler"
