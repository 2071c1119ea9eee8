#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a fixed time each.
# Usage: hack/fuzz.sh [FUZZTIME]   (default 10s)
set -euo pipefail
fuzztime="${1:-10s}"
cd "$(dirname "$0")/.."
found=0
while IFS= read -r file; do
	pkg="./$(dirname "${file}")"
	while IFS= read -r target; do
		found=$((found + 1))
		echo "== fuzz ${pkg} ${target} (${fuzztime})"
		go test "${pkg}" -run '^$' -fuzz "^${target}\$" -fuzztime "${fuzztime}"
	done < <(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "${file}")
done < <(git ls-files '*_test.go' | sort)
echo "ran ${found} fuzz targets"
