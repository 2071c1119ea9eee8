#!/usr/bin/env bash
# Test of the tests: users fork this repository and edit nodegroups/, so no
# test may depend on it except the golden test of out/ (and the check that
# nodegroups/ is the docs' copy of the example, which skips in a fork). This
# copies the tracked files of the working tree to a scratch directory and
# edits nodegroups/ the way a fork starts: adds a GPU group, changes one,
# removes cpu-burst, keeping the example's cluster and project. It then runs
# the tests and expects exactly one failing test, TestGoldenShippedExample,
# saying "run nodegen gen"; runs `nodegen gen`; and expects the tests to pass.
# Usage: hack/test-example-independence.sh [packages]
#   packages: what to test, ./... by default (as long as go test ./...);
#   e.g. ./internal/cli ./internal/testing/docexamples for the tests that
#   read nodegroups/ or show the example's output.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=("$@")
((${#pkgs[@]} > 0)) || pkgs=(./...)
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
git ls-files -z | xargs -0 cp --parents -t "${scratch}"
cd "${scratch}"
rm nodegroups/cpu-burst.cue
sed -i 's/max:            4/max:            6/' nodegroups/gpu-t4.cue
cat >nodegroups/gpu-l4.cue <<'CUE'
nodeGroups: "gpu-l4": {
	kind: "gce"
	zones: ["us-central1-a", "us-central1-b"]
	machineType:    "g2-standard-8"
	image:          "projects/acme-hybrid-ai/global/images/family/k8s-node-gpu-1-35"
	bootDiskSizeGb: 200
	min:            0
	max:            3
	gpu: {type: "nvidia-l4", count: 1}
	labels: "example.com/pool": "gpu-l4"
	taints: [{key: "nvidia.com/gpu", value: "present", effect: "NoSchedule"}]
}
CUE
go run ./cmd/nodegen vet
log="${scratch}/test.log"
if go test "${pkgs[@]}" >"${log}" 2>&1; then
	echo "FAIL: go test ${pkgs[*]} passed although out/ is stale: the golden test did not notice"
	exit 1
fi
failed="$(grep -E '^--- FAIL: ' "${log}" | sed 's/ (.*//' | sort -u)"
if [[ "${failed}" != "--- FAIL: TestGoldenShippedExample" ]] || ! grep -q 'run nodegen gen' "${log}"; then
	echo "FAIL: tests other than the golden test depend on nodegroups/:"
	grep -E '^(--- FAIL|FAIL|panic)' "${log}" || true
	exit 1
fi
go run ./cmd/nodegen gen >/dev/null
if ! go test "${pkgs[@]}" >"${log}" 2>&1; then
	echo "FAIL: after nodegen gen, go test ${pkgs[*]} still fails on the edited nodegroups/:"
	grep -E '^(--- FAIL|FAIL|panic|ok )' "${log}" || true
	grep -E -A5 '^--- FAIL' "${log}" | head -60 || true
	exit 1
fi
echo "ok: only TestGoldenShippedExample depends on nodegroups/, and go test ${pkgs[*]} passes after nodegen gen"
