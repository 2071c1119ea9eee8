#!/usr/bin/env bash
# Refreshes nodegen's Compute Engine tables from the live API with gcloud
# (needs an authenticated gcloud and a project), then regenerates
# internal/gce/zz_generated.go. Review the diff before committing: the
# tables decide which machine types, regions and zones `nodegen vet` accepts,
# and in which zones it accepts each GPU type. The accelerator table the live
# answer writes speaks for every type and region the project sees (a zone
# that needs an allowlist the project lacks is then refused).
# Usage: hack/gcedata/refresh.sh [PROJECT]
set -euo pipefail
cd "$(dirname "$0")/../.."
project=()
if [[ $# -gt 0 ]]; then project=(--project="$1"); fi
data=internal/gce/data
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
gcloud compute machine-types list "${project[@]}" --format=json >"${tmp}/machine-types.json"
gcloud compute zones list "${project[@]}" --format=json >"${tmp}/zones.json"
gcloud compute accelerator-types list "${project[@]}" --format=json >"${tmp}/accelerator-types.json"
mv "${tmp}/machine-types.json" "${tmp}/zones.json" "${data}/"
go run ./hack/gcedata -from-gcloud "${tmp}/accelerator-types.json" -zones "${data}/zones.json" \
	-accelerator-zones "${data}/accelerator-zones.csv" \
	-source "gcloud compute accelerator-types list, live API, $(date -u +%F)"
go generate ./internal/gce
git --no-pager diff --stat -- "${data}" internal/gce/zz_generated.go
