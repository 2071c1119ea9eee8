#!/usr/bin/env bash
# Test of the tests: users fork this repository and edit nodegroups/, so no
# test may depend on it except the golden test of out/. This copies the
# working tree to a scratch directory, adds a group to nodegroups/, changes
# one, removes cpu-burst and sets another GCP project, then runs
# `go test ./...` there and expects
# exactly one failing test, TestGoldenShippedExample, saying "run nodegen gen".
# Usage: hack/test-example-independence.sh   (takes as long as go test ./...)
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
git ls-files -z | xargs -0 cp --parents -t "${scratch}"
cd "${scratch}"
rm nodegroups/cpu-burst.cue
sed -i 's/max:            4/max:            6/' nodegroups/gpu-t4.cue
# The source is now the user's own: another project (the docs' examples,
# which show the shipped example's output, then skip themselves).
sed -i 's/acme-hybrid-ai/acme-own/g' nodegroups/*.cue
cat >nodegroups/mem-burst.cue <<'CUE'
nodeGroups: "mem-burst": {
	kind: "gce"
	zones: ["us-central1-c"]
	machineType: "n2-highmem-8"
	image:       "projects/acme-hybrid-ai/global/images/family/k8s-node-1-35"
	min: 0
	max: 5
	labels: "example.com/pool": "mem-burst"
}
CUE
go run ./cmd/nodegen vet
log="${scratch}/test.log"
if go test ./... >"${log}" 2>&1; then
	echo "FAIL: go test ./... passed although out/ is stale: the golden test did not notice"
	exit 1
fi
failed="$(grep -E '^--- FAIL: ' "${log}" | sed 's/ (.*//' | sort -u)"
if [[ "${failed}" != "--- FAIL: TestGoldenShippedExample" ]] || ! grep -q 'run nodegen gen' "${log}"; then
	echo "FAIL: tests other than the golden test depend on nodegroups/:"
	grep -E '^(--- FAIL|FAIL|panic)' "${log}" || true
	exit 1
fi
go run ./cmd/nodegen gen >/dev/null
go test ./internal/cli -run TestGoldenShippedExample
echo "ok: only TestGoldenShippedExample depends on nodegroups/, and it passes after nodegen gen"
