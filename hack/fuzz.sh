#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a fixed time each.
# Usage: hack/fuzz.sh [FUZZTIME]   (default 10s)
#
# Each package's test binary is built once with the fuzzing instrumentation
# (go test -c -fuzz) and then runs each of its targets, as go test -fuzz
# would run it: in the package's directory, with the fuzz cache of
# $(go env GOCACHE)/fuzz, so the corpus a run grows is kept for the next, and
# a failing input lands in the package's testdata/fuzz (which every plain
# go test then runs). Building once saves a link per target.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" at the -fuzztime boundary when a worker is still in
# an input (go.dev/issue/75804, fixed in Go 1.27): no failing input, no
# crash. A run that fails that way, and only that way, is run once more; a
# run that writes a failing input, panics or fails a check fails at once.
set -euo pipefail
fuzztime="${1:-10s}"
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
log="${work}/log"
trap 'rm -rf "${work}"' EXIT
cache="$(go env GOCACHE)/fuzz"

# boundary_flake LOG: the run failed with the coordinator's deadline error
# and nothing else that marks a finding.
boundary_flake() {
	grep -q 'context deadline exceeded' "$1" &&
		! grep -qE 'Failing input written|panic:|^ +[A-Za-z0-9_]+\.go:[0-9]+: ' "$1"
}

# The fuzz targets, "<package dir> <target>" per line, sorted.
git ls-files '*_test.go' | while IFS= read -r file; do
	sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "${file}" | sed "s|^|$(dirname "${file}") |"
done | sort >"${work}/targets"

found=0
mapfile -t dirs < <(cut -d' ' -f1 "${work}/targets" | uniq)
for dir in "${dirs[@]}"; do
	pkg="$(go list "./${dir}")"
	bin="${work}/${dir//\//_}.test"
	mapfile -t targets < <(awk -v d="${dir}" '$1 == d {print $2}' "${work}/targets")
	echo "== build ./${dir} with fuzzing instrumentation"
	go test -c -o "${bin}" -fuzz "^${targets[0]}\$" "./${dir}"
	for target in "${targets[@]}"; do
		found=$((found + 1))
		for try in 1 2; do
			echo "== fuzz ./${dir} ${target} (${fuzztime})"
			if (cd "${dir}" && "${bin}" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "${fuzztime}" \
				-test.fuzzcachedir "${cache}/${pkg}" -test.paniconexit0) 2>&1 | tee "${log}"; then
				break
			fi
			if ((try == 1)) && boundary_flake "${log}"; then
				echo "== ${target}: the fuzz coordinator's deadline race (go.dev/issue/75804), no finding; running it once more"
				continue
			fi
			exit 1
		done
	done
done
echo "ran ${found} fuzz targets"
