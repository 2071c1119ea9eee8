#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a fixed time each.
# Usage: hack/fuzz.sh [FUZZTIME]   (default 10s)
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" at the -fuzztime boundary when a worker is still in
# an input (go.dev/issue/75804, fixed in Go 1.27): no failing input, no
# crash. A run that fails that way, and only that way, is run once more; a
# run that writes a failing input, panics or fails a check fails at once.
set -euo pipefail
fuzztime="${1:-10s}"
cd "$(dirname "$0")/.."
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT

# boundary_flake LOG: the run failed with the coordinator's deadline error
# and nothing else that marks a finding.
boundary_flake() {
	grep -q 'context deadline exceeded' "$1" &&
		! grep -qE 'Failing input written|panic:|^ +[A-Za-z0-9_]+\.go:[0-9]+: ' "$1"
}

found=0
while IFS= read -r file; do
	pkg="./$(dirname "${file}")"
	while IFS= read -r target; do
		found=$((found + 1))
		for try in 1 2; do
			echo "== fuzz ${pkg} ${target} (${fuzztime})"
			if go test "${pkg}" -run '^$' -fuzz "^${target}\$" -fuzztime "${fuzztime}" 2>&1 | tee "${log}"; then
				break
			fi
			if ((try == 1)) && boundary_flake "${log}"; then
				echo "== ${target}: the fuzz coordinator's deadline race (go.dev/issue/75804), no finding; running it once more"
				continue
			fi
			exit 1
		done
	done < <(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "${file}")
done < <(git ls-files '*_test.go' | sort)
echo "ran ${found} fuzz targets"
