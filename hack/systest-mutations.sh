#!/usr/bin/env bash
# Test of the system tests: for each row of CONTRIBUTING.md's system-test
# table ("what breaking it takes"), this breaks the product the way the row
# says, in a throwaway worktree of HEAD, and runs that one system test
# (internal/testing/systest) there against the real autoscaler. Every
# mutation must make its test fail; each test must pass unmutated (run
# first, once per test, in a worktree of its own). A mutation under which
# the test passes "survives": the script reports it and exits 1. A
# mutation whose text is no longer in the code is an error (exit 2), not a
# result.
#
# Usage: hack/systest-mutations.sh [-l | -n | -s] [NAME...]
#   -l     list the mutations and exit
#   -n     apply each mutation and show its diff, run no test
#   -s     skip the unmutated runs (when they passed in an earlier run)
#   NAME   run only these mutations (and the unmutated runs of their tests)
#
# Environment, as for the system tests (see CONTRIBUTING.md), required:
#   NODEGEN_TESTCP_DIR  the built test control plane
#   NODEGEN_CA_SOURCE   the autoscaler's source (its builds are cached)
# NODEGEN_REQUIRE_TESTCP=1 and NODEGEN_REQUIRE_CA=1 are set here, so that
# a test that would skip fails instead.
#
# The tests run one at a time (each test's own subtests as it runs them).
# The whole run takes about an hour on two cores, plus one build of the
# autoscaler for the patch mutation on its first run (the build is cached,
# keyed by the patch's diff): too slow for .ci/run, which keeps the cheap
# forms (TestCapFlagsCountDeclaredNodes for the caps). Commit first: the
# worktrees are of HEAD, not of the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

pkg=./internal/testing/systest

# The mutations: name, test (a go test -run pattern), what breaks, and
# optionally the cheap form that CI runs (a package and a -run pattern),
# which must fail too. Each name has a function mut_<name with - as _>
# that changes the worktree in the current directory.
mutations=(
	"startup-taint|^TestScaleUpFromZero$|GPU groups rendered without their default startup taint (model.Resolve); nodegen's verification refuses the render"
	"startup-taint-join|^TestScaleUpFromZero$|the startup taint left out of the nodes' JoinConfiguration (model.NodeGroup.JoinTaints), and the verification that refuses it (agree) lifted"
	"stock-is-patched-noprovid|^TestNoProviderIDNoScaling$|the test's stock autoscaler replaced by nodegen's patched build (hack/testca/build.sh applies the patch without --patch)"
	"stock-is-patched-freeze|^TestUpcomingNodeFreeze$|the test's stock autoscaler replaced by nodegen's patched build (hack/testca/build.sh applies the patch without --patch)"
	"patch-guard-never|^TestPatchedBuild$|the patch's guard never true (templates/autoscaler-gce-nodegroupfornode.patch tests the prefix none://)"
	"nodes-min-1|^TestScaleDownEmptyNode$|--nodes rendered with a min of 1 for every MIG"
	"priorities-inverted|^TestSpotStockoutFallsBack$|the priority expander's ConfigMap with the priorities inverted, 1000000 (the schema's max) less each (on-demand over Spot)"
	"priorities-negative|^TestSpotStockoutFallsBack$|the priority expander's ConfigMap with every priority negated, which the expander ignores (the next expander picks)"
	"cores-twice|^TestCapsBind$/^cores$|--cores-total adds the declared nodes' vCPUs twice|./internal/render ^TestCapFlagsCountDeclaredNodes$"
	"cores-none|^TestCapsBind$/^cores$|--cores-total adds none of the declared nodes' vCPUs|./internal/render ^TestCapFlagsCountDeclaredNodes$"
	"memory-twice|^TestCapsBind$/^memory$|--memory-total adds the declared nodes' GiB twice|./internal/render ^TestCapFlagsCountDeclaredNodes$"
	"memory-none|^TestCapsBind$/^memory$|--memory-total adds none of the declared nodes' GiB|./internal/render ^TestCapFlagsCountDeclaredNodes$"
	"nodes-twice|^TestCapsBind$/^nodes$|--max-nodes-total adds the declared nodes twice|./internal/render ^TestCapFlagsCountDeclaredNodes$"
	"nodes-none|^TestCapsBind$/^nodes$|--max-nodes-total adds none of the declared nodes|./internal/render ^TestCapFlagsCountDeclaredNodes$"
	"gpus-onprem|^TestCapsBind$/^gpus$|--gpu-total adds the declared nodes' GPUs of the type|./internal/render ^TestCapFlagsCountDeclaredNodes$"
	"alert-needs-failed-metric|^TestPendingWithoutScaleUpAlert$|NodegenPendingWithoutScaleUp made to require a failed scale-up in the last 10 minutes, as the community's alerts do"
	"letgo-off|^TestZoneLeavesInPrintedOrder$|rollout --yes no longer refuses while the running autoscaler's arguments name a leaving MIG (internal/rollout checkAutoscalerLetGo)|./internal/rollout ^TestRolloutRefusesWhileAutoscalerNamesLeavingMIG$"
	"noid-inverted|^TestPendingWithoutScaleUpAlert$|NodegenNodeWithoutProviderID selects the Nodes with a providerID|./internal/render ^TestMonitoringRulesPromtool$"
	"pending-whole-window|^TestUpcomingNodeFreezeAlert$|NodegenPendingWithoutScaleUp silenced for the fixture's whole scale-up window (35m) after any node added, as it was|./internal/render ^TestMonitoringRulesPromtool$"
	"pending-no-tried-term|^TestAlertsBesideHealthyScaleUp$|NodegenPendingWithoutScaleUp without its condition on the autoscaler's scale-up tries (pods waiting for their upcoming node long enough fire it)|./internal/render ^TestMonitoringRulesPromtool$"
	"csr-alert-gone|^TestAlertsBesideHealthyScaleUp$|NodegenKubeletCSRPending not rendered"
	"stuck-alert-late|^TestAlertsBesideHealthyScaleUp$|NodegenStartupTaintStuck's threshold an hour past the group's init budget"
	"stuck-alert-no-taint|^TestAlertsBesideHealthyScaleUp$|NodegenStartupTaintStuck without its condition on the startup taint (an old validated node fires it)"
)

# subst FILE OLD NEW: replaces the one occurrence of OLD in FILE by NEW;
# fails when OLD is not there once.
subst() {
	local file=$1 old=$2 new=$3 s
	s="$(<"$file")"
	local rest=${s#*"$old"}
	if [[ $rest == "$s" ]]; then
		printf 'mutation: %s has no\n%s\n' "$file" "$old" >&2
		return 1
	fi
	if [[ $rest == *"$old"* ]]; then
		printf 'mutation: %s has more than one\n%s\n' "$file" "$old" >&2
		return 1
	fi
	printf '%s\n' "${s/"$old"/"$new"}" >"$file"
}

capacity=internal/render/autoscaler/capacity.go
cores='caps.Cores.Min+fixed.CPU, caps.Cores.Max+fixed.CPU'
memory='caps.MemoryGiB.Min+fixed.MemoryGiB, caps.MemoryGiB.Max+fixed.MemoryGiB'
nodes='int64(caps.MaxNodesTotal)+fixed.Nodes'

mut_startup_taint_join() {
	subst internal/model/model.go $'\tif g.StartupTaint != nil {\n\t\tout = append(out, *g.StartupTaint)' \
		$'\tif false && g.StartupTaint != nil {\n\t\tout = append(out, *g.StartupTaint)'
	subst internal/agree/agree.go 'if g.StartupTaint != nil && startup != 1 {' 'if false && g.StartupTaint != nil && startup != 1 {'
}
mut_startup_taint() {
	subst internal/model/model.go 'if g.GPU != nil && g.StartupTaint == nil && g.Kind != KindOnPrem {' \
		'if false && g.GPU != nil && g.StartupTaint == nil && g.Kind != KindOnPrem {'
}
# The test asks for the stock build (testca.Binary with no patch, which runs
# build.sh without --patch); the build script then applies nodegen's patch.
# The cache key is the patch's, so the patched build is reused.
mut_stock_is_patched() {
	subst hack/testca/build.sh $'patch=""\n' \
		$'patch="$(cd "$(dirname "$0")/../.." && pwd)/templates/autoscaler-gce-nodegroupfornode.patch"\n'
}
mut_stock_is_patched_noprovid() { mut_stock_is_patched; }
mut_stock_is_patched_freeze() { mut_stock_is_patched; }
mut_patch_guard_never() {
	subst templates/autoscaler-gce-nodegroupfornode.patch '+	if !strings.HasPrefix(node.Spec.ProviderID, "gce://") {' \
		'+	if strings.HasPrefix(node.Spec.ProviderID, "none://") {'
}
mut_nodes_min_1() {
	subst internal/render/autoscaler/autoscaler.go 'fmt.Fprintf(&b, "--nodes=%d:%d:%s\n", m.Min, m.Max, m.URL)' \
		'fmt.Fprintf(&b, "--nodes=%d:%d:%s\n", max(m.Min, 1), m.Max, m.URL)'
}
mut_priorities_inverted() {
	subst "$capacity" $'\t\tp := m.Group.GroupPriority()\n' $'\t\tp := 1000000 - m.Group.GroupPriority()\n'
}
mut_priorities_negative() {
	subst "$capacity" $'\t\tp := m.Group.GroupPriority()\n' $'\t\tp := -m.Group.GroupPriority()\n'
}
mut_cores_twice() { subst "$capacity" "$cores" 'caps.Cores.Min+2*fixed.CPU, caps.Cores.Max+2*fixed.CPU'; }
mut_cores_none() { subst "$capacity" "$cores" 'caps.Cores.Min, caps.Cores.Max'; }
mut_memory_twice() { subst "$capacity" "$memory" 'caps.MemoryGiB.Min+2*fixed.MemoryGiB, caps.MemoryGiB.Max+2*fixed.MemoryGiB'; }
mut_memory_none() { subst "$capacity" "$memory" 'caps.MemoryGiB.Min, caps.MemoryGiB.Max'; }
mut_nodes_twice() { subst "$capacity" "$nodes" 'int64(caps.MaxNodesTotal)+2*fixed.Nodes'; }
mut_nodes_none() { subst "$capacity" "$nodes" 'int64(caps.MaxNodesTotal)'; }
mut_gpus_onprem() {
	subst "$capacity" $'\t\tr := caps.GPUs[t]\n\t\tout = append(out, [2]string{"gpu-total", fmt.Sprintf("%s:%d:%d", t, r.Min, r.Max)})' \
		$'\t\tr, n := caps.GPUs[t], int64(0)\n\t\tfor _, d := range src.DeclaredNodes() {\n\t\t\tif d.GPUType == t {\n\t\t\t\tn += d.GPUs\n\t\t\t}\n\t\t}\n\t\tout = append(out, [2]string{"gpu-total", fmt.Sprintf("%s:%d:%d", t, r.Min+n, r.Max+n)})'
}
mut_letgo_off() {
	subst internal/rollout/autoscalerref.go 'if arg := namesMIG(d, cl.GCP.Project, zone, mig); arg != "" {' \
		'if arg := namesMIG(d, cl.GCP.Project, zone, mig); false && arg != "" {'
}

mut_alert_needs_failed_metric() {
	subst internal/render/monitoring/alerts.go 'expr: "(" + pending + ") and on() (time() - max("' \
		'expr: "(" + pending + ") and on() (sum(increase(" + ca("failed_scale_ups_total") + "[10m])) > 0) and on() (time() - max("'
}

alerts=internal/render/monitoring/alerts.go
mut_noid_inverted() { subst "$alerts" '(kube_node_info{provider_id=""})' '(kube_node_info{provider_id!=""})'; }
# Go source text, with its backquotes and no shell expansion.
# shellcheck disable=SC2016
tried='"(" + pending + ") and on() (time() - max(" + ca("last_activity", `activity="scaleUp"`) + ") < " + seconds(scaleUpTried) + ")" +'
mut_pending_no_tried_term() { subst "$alerts" "$tried" '"(" + pending + ")" +'; }
mut_pending_whole_window() {
	subst "$alerts" "$tried" '"(" + pending + ")" +'
	subst "$alerts" '"[" + string(promDuration(scaleUpTried)) + "]))' '"[35m]))'
}
mut_csr_alert_gone() { subst "$alerts" 'if budget > 0 {' 'if false && budget > 0 {'; }
mut_stuck_alert_late() {
	subst "$alerts" $'\tstartup, _ := src.MaxNodeStartupTime()\n' $'\tstartup, _ := src.MaxNodeStartupTime()\n\tstartup += time.Hour\n'
}
mut_stuck_alert_no_taint() {
	subst "$alerts" '" and on(node) max by (node) (kube_node_spec_taint{" + nodes + ",key=" + q(g.StartupTaint.Key) + "})",' '"",'
}

dry=""
skip=""
case ${1:-} in
-n)
	dry=1
	shift
	;;
-s)
	skip=1
	shift
	;;
esac
if [[ ${1:-} == -l ]]; then
	for m in "${mutations[@]}"; do
		IFS='|' read -r name run what cheap <<<"$m"
		printf '%-26s %-28s %s%s\n' "$name" "$run" "$what" "${cheap:+ (and $cheap)}"
	done
	exit 0
fi

selected=()
for m in "${mutations[@]}"; do
	name=${m%%|*}
	if (($# == 0)); then
		selected+=("$m")
		continue
	fi
	for want in "$@"; do
		if [[ $want == "$name" ]]; then
			selected+=("$m")
		fi
	done
done
(($# == 0 || ${#selected[@]} == $#)) || {
	echo "unknown mutation among: $* (-l lists them)" >&2
	exit 2
}

: "${NODEGEN_TESTCP_DIR:?set NODEGEN_TESTCP_DIR to the built test control plane (see CONTRIBUTING.md)}"
: "${NODEGEN_CA_SOURCE:?set NODEGEN_CA_SOURCE to the Cluster Autoscaler source (see CONTRIBUTING.md)}"
export NODEGEN_TESTCP_DIR NODEGEN_CA_SOURCE NODEGEN_REQUIRE_TESTCP=1 NODEGEN_REQUIRE_CA=1

work="$(mktemp -d)"
tree=""
cleanup() {
	local rc=$?
	[[ -z $tree ]] || git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || true
	rm -rf "$work"
	git -C "$root" worktree prune
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# keylines LOG: the test's last messages before it failed (its file:line
# lines, less the harness's progress and the dumps made on failure), and
# the --- FAIL lines.
keylines() {
	grep -E '^ *[A-Za-z0-9_]+\.go:[0-9]+: |^ *--- FAIL' "$1" |
		grep -vE "\.go:[0-9]+: (testca: |testcp: |kubectl apply |explain's plan: |the stand-ins' events|the autoscaler's log )" |
		sed -E 's/^ +//' | cut -c1-300 | tail -n 6 || true
}

# verdict LOG RC: pass, fail or error (a build or harness failure, a skip).
verdict() {
	if (($2 == 0)) && grep -qE '^(--- PASS|ok )' "$1" && ! grep -q -- '--- SKIP' "$1"; then
		echo pass
	elif grep -qE '^(--- FAIL|FAIL)' "$1" && ! grep -qE '\[build failed\]|\[setup failed\]|testca: hack/testca/build.sh: ' "$1"; then
		echo fail
	else
		echo error
	fi
}

# run LABEL RUN [MUTATION [CHEAP]]: runs the test in a new worktree of
# HEAD, after the mutation if any, then the cheap form if any; sets status
# and cheap_status to pass, fail or error.
status=""
cheap_status=""
run() {
	local label=$1 pattern=$2 mut=${3:-} cheap=${4:-} log="$work/$1.log" started=$SECONDS rc=0
	tree="$work/tree"
	git -C "$root" worktree add --quiet --detach "$tree" HEAD
	if [[ -n $mut ]]; then
		if ! (cd "$tree" && "mut_${mut//-/_}"); then
			status=error
			git -C "$root" worktree remove --force "$tree"
			tree=""
			return
		fi
		(cd "$tree" && git --no-pager diff -U1)
	fi
	if [[ -n $dry ]]; then
		status=applied
		git -C "$root" worktree remove --force "$tree"
		tree=""
		return
	fi
	echo "--- $label: go test $pkg -run '$pattern' -count=1 -v"
	(cd "$tree" && go test "$pkg" -run "$pattern" -count=1 -v -timeout 20m) >"$log" 2>&1 || rc=$?
	cat "$log"
	status="$(verdict "$log" "$rc")"
	echo "=== $label: $status in $((SECONDS - started))s"
	if [[ $status != pass ]]; then
		keylines "$log" | sed 's/^/    /'
	fi
	cheap_status=""
	if [[ -n $cheap ]]; then
		rc=0
		echo "--- $label, the cheap form: go test ${cheap% *} -run '${cheap#* }' -count=1"
		(cd "$tree" && go test "${cheap% *}" -run "${cheap#* }" -count=1) >"$log.cheap" 2>&1 || rc=$?
		cat "$log.cheap"
		cheap_status="$(verdict "$log.cheap" "$rc")"
		echo "=== $label, the cheap form: $cheap_status"
	fi
	git -C "$root" worktree remove --force "$tree"
	tree=""
}

summary=()
bad=0
broken=0
declare -A baseline=()
for m in "${selected[@]}"; do
	IFS='|' read -r name pattern what cheap <<<"$m"
	test=${pattern%%/*}
	if [[ -z $dry$skip && -z ${baseline[$test]:-} ]]; then
		run "unmutated-${test//[^A-Za-z]/}" "$test"
		baseline[$test]=$status
		summary+=("$(printf '%-26s %-28s %s' unmutated "$test" "$status (want pass)")")
		[[ $status == pass ]] || broken=1
	fi
	echo "### $name: $what"
	run "$name" "$pattern" "$name" "$cheap"
	case $status in
	fail) verdict="failed (killed)" ;;
	applied) verdict="applies" ;;
	pass)
		verdict="PASSED: the mutation survives"
		bad=1
		;;
	*)
		verdict="ERROR: no result (the mutation does not apply or the test did not build)"
		broken=1
		;;
	esac
	case $cheap_status in
	"") ;;
	fail) verdict+="; the cheap form failed" ;;
	pass)
		verdict+="; the cheap form PASSED"
		bad=1
		;;
	*)
		verdict+="; the cheap form: ERROR"
		broken=1
		;;
	esac
	summary+=("$(printf '%-26s %-28s %s' "$name" "$pattern" "$verdict")")
done

echo
echo "Summary (at $(git -C "$root" rev-parse --short HEAD)):"
printf '%s\n' "${summary[@]}"
((broken == 0)) || exit 2
((bad == 0)) || exit 1
