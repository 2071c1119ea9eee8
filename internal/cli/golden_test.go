package cli_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestGoldenShippedExample reads nodegroups/: it renders the shipped
// example (or the user's edit of it) and compares the result with the
// committed out/ byte for byte, so that `go test ./...` alone catches a
// stale out/ (with --full: the render, never the shortcut of a record a
// previous run left). Besides it, only TestShippedCopyCurrent and
// TestGoldenShippedGPUZones read nodegroups/; every other test uses its
// own fixtures.
func TestGoldenShippedExample(t *testing.T) {
	root := testsrc.RepoRoot()
	var out, errb bytes.Buffer
	code := cli.Main([]string{"check", "--full", "--source", testsrc.ShippedDir(), "--out", filepath.Join(root, "out")}, strings.NewReader(""), &out, &errb)
	if code != cli.ExitOK {
		t.Fatalf("out/ does not match the rendering of nodegroups/ (exit %d): run nodegen gen (go run ./cmd/nodegen gen) and commit out/\n%s%s", code, out.String(), errb.String())
	}
}

// TestGoldenMeshExample does for the shipped fleet example,
// examples/mesh/nodegroups, what TestGoldenShippedExample does for
// nodegroups/: its committed out/ (examples/mesh/out) must be what gen
// renders.
func TestGoldenMeshExample(t *testing.T) {
	dir := filepath.Join(testsrc.RepoRoot(), "examples", "mesh")
	var out, errb bytes.Buffer
	code := cli.Main([]string{"check", "--source", filepath.Join(dir, "nodegroups"), "--out", filepath.Join(dir, "out")}, strings.NewReader(""), &out, &errb)
	if code != cli.ExitOK {
		t.Fatalf("examples/mesh/out does not match the rendering of examples/mesh/nodegroups (exit %d): run go run ./cmd/nodegen gen --source examples/mesh/nodegroups --out examples/mesh/out and commit it\n%s%s", code, out.String(), errb.String())
	}
}

// TestGoldenShippedGPUZones holds every GPU group of the shipped examples
// (nodegroups/ and examples/mesh/nodegroups) to nodegen's accelerator
// table: a source of the table speaks for the group's accelerator type in
// its cluster's region, and lists each of the group's zones. An example
// that only check --by-hand could vouch for, or whose zone the table
// excludes, fails here.
func TestGoldenShippedGPUZones(t *testing.T) {
	checked := 0
	for _, dir := range []string{testsrc.ShippedDir(), filepath.Join(testsrc.RepoRoot(), "examples", "mesh", "nodegroups")} {
		l, err := source.Load(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, src := range l.Fleet.Clusters {
			region := src.Cluster.GCP.Region
			for _, g := range src.Groups() {
				acc := g.Accelerator()
				if !g.Cloud() || acc == "" {
					continue
				}
				checked++
				offer, ok := gce.AcceleratorOffered(acc, region)
				if !ok {
					t.Errorf("%s: cluster %s, group %s: no source of %s lists %s in %s", dir, src.Cluster.Name, g.Name, gce.AcceleratorZonesFile, acc, region)
					continue
				}
				for _, z := range g.Zones {
					if !slices.Contains(offer.Zones, z) {
						t.Errorf("%s: cluster %s, group %s: %s does not list %s in zone %s (it lists %s, from %s)", dir, src.Cluster.Name, g.Name, gce.AcceleratorZonesFile, acc, z, strings.Join(offer.Zones, ", "), strings.Join(offer.Sources, "; "))
					}
				}
			}
		}
	}
	if checked < 3 {
		t.Fatalf("%d GPU groups in the shipped examples, want gpu-t4 and spot-gpu-t4 of nodegroups/ and gpu-burst of examples/mesh", checked)
	}
}

// requireShippedEnv names the variable under which nodegroups/ must be
// the example the docs show: a maintainer who changes the shipped example
// sets it; CI does not, so that a fork's own nodegroups/ passes.
const requireShippedEnv = "NODEGEN_REQUIRE_SHIPPED_EXAMPLE"

// TestShippedCopyCurrent: the README's and docs' examples run on the tests'
// fixed copy of the shipped example (testsrc.ShippedCopyDir), so that a
// fork's own nodegroups/ breaks none of them. In this repository the copy
// must be nodegroups/ byte for byte, or the docs would show another
// source's output: with NODEGEN_REQUIRE_SHIPPED_EXAMPLE=1 a difference
// fails; otherwise (a fork, and CI, which a fork runs too) it skips,
// naming the difference.
func TestShippedCopyCurrent(t *testing.T) {
	diff := dirDiff(t, testsrc.ShippedDir(), testsrc.ShippedCopyDir())
	if diff == "" {
		return
	}
	msg := "nodegroups/ is not the shipped example the docs show (" + diff + ")"
	if os.Getenv(requireShippedEnv) == "1" {
		t.Fatalf("%s=1 and %s: when nodegroups/ changes on purpose, copy it with cp nodegroups/*.cue internal/testing/testsrc/testdata/shipped/nodegroups/ and update the docs (go test ./internal/testing/docexamples/ names the blocks)", requireShippedEnv, msg)
	}
	t.Skipf("%s: fine in a fork; a change to this repository's shipped example requires it (%s=1)", msg, requireShippedEnv)
}

// dirDiff names the first difference between the files of two
// directories (names and contents), or returns "".
func dirDiff(t *testing.T, a, b string) string {
	t.Helper()
	read := func(dir string) map[string]string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[e.Name()] = string(raw)
		}
		return files
	}
	fa, fb := read(a), read(b)
	names := slices.Sorted(maps.Keys(fa))
	for _, n := range slices.Sorted(maps.Keys(fb)) {
		if _, ok := fa[n]; !ok {
			return n + " is only in the copy"
		}
	}
	for _, n := range names {
		other, ok := fb[n]
		switch {
		case !ok:
			return n + " is not in the copy"
		case other != fa[n]:
			return n + " differs"
		}
	}
	return ""
}

// testOverride matches what a script reading a setting from its
// environment, for tests to change, looks like: ${NODEGEN_...}, or an
// endpoint with a default, ${..._URL:-...}.
var testOverride = regexp.MustCompile(`\$\{(NODEGEN_[A-Za-z0-9_]*|[A-Za-z0-9_]*_URL:-)`)

// documentedSettings are, by script name, the variables a shipped script
// of a file reads from its environment by design: the settings its header
// documents for the one who runs it, and what it sources.
var documentedSettings = map[string][]string{
	// The node image's build script: IMAGE_ROOT is the root it writes
	// under (empty on the builder VM, a chroot's root); ID and VERSION_ID
	// come from sourcing that root's /etc/os-release.
	"build.sh": {"IMAGE_ROOT", "ID", "VERSION_ID"},
	// The on-prem VPN gateway's installer: with ROOT set, it installs
	// into that directory instead of / and starts nothing.
	"install.sh": {"ROOT"},
}

// kubeletEnv are the variables the kubelet sets in every container: the
// API server's service, which client-go's in-cluster configuration reads
// (kubernetes/kubernetes v1.37.2, pkg/kubelet/kubelet_pods.go,
// getServiceEnvVarMap: the kubernetes Service's variables whatever the
// pod's enableServiceLinks). A script of a ConfigMap may test for them.
var kubeletEnv = map[string]bool{"KUBERNETES_SERVICE_HOST": true, "KUBERNETES_SERVICE_PORT": true}

// TestShippedScriptsReadNoTestOverrides: the scripts in the committed
// outputs of the shipped examples (the startup scripts, the other .sh
// files, and the scripts of the manifests' ConfigMaps) take their
// endpoints, directories, delays and modes as constants, not from an
// environment variable that tests set. A script read from a ConfigMap
// takes from its environment (environmentReads) exactly the variables its
// workload's container sets (HOME aside, which is kubectl's), each without
// a default; a script of a file takes none. The golden tests above tie
// these files to what gen renders.
func TestShippedScriptsReadNoTestOverrides(t *testing.T) {
	root := testsrc.RepoRoot()
	// The constants the scripts must set, by script name.
	wants := map[string][]string{
		"startup-script.sh":     {"readonly METADATA_URL=http://metadata.google.internal/computeMetadata/v1"},
		"node-csr-approver.sh":  {"readonly METADATA_URL=http://169.254.169.254/computeMetadata/v1", "readonly COMPUTE_URL=https://compute.googleapis.com/compute/v1"},
		"node-lifecycle.sh":     {"readonly METADATA_URL=http://169.254.169.254/computeMetadata/v1", "readonly COMPUTE_URL=https://compute.googleapis.com/compute/v1"},
		"join-token-renewer.sh": {"readonly METADATA_URL=http://metadata.google.internal/computeMetadata/v1"},
	}
	for _, out := range []string{filepath.Join(root, "out"), filepath.Join(root, "examples", "mesh", "out")} {
		seen := map[string]int{}
		// inputs: the variables the workload's container sets, none for a
		// file; nil for a ConfigMap no workload mounts (a cluster without
		// GPU groups ships the taint remover's), whose inputs are unknown.
		check := func(where, name, script string, inputs map[string]bool) {
			seen[name]++
			for _, m := range testOverride.FindAllString(script, -1) {
				t.Errorf("%s reads %s...}", where, m)
			}
			reads, err := environmentReads(script)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				return
			}
			for _, v := range slices.Sorted(maps.Keys(reads)) {
				switch r := reads[v]; {
				case slices.Contains(documentedSettings[name], v):
				case inputs != nil && kubeletEnv[v]:
				case r.hasDefault:
					t.Errorf("%s:%d reads %s from the environment with a default: a setting for tests to change, not an input its workload sets", where, r.line, v)
				case inputs != nil && !inputs[v]:
					t.Errorf("%s:%d reads %s from the environment, which its workload does not set", where, r.line, v)
				}
			}
			for _, v := range slices.Sorted(maps.Keys(inputs)) {
				if _, ok := reads[v]; !ok && v != "HOME" {
					t.Errorf("%s: its workload sets %s, which the script does not read from its environment", where, v)
				}
			}
			for _, line := range wants[name] {
				if !slices.Contains(strings.Split(script, "\n"), line) {
					t.Errorf("%s has no line %s", where, line)
				}
			}
		}
		err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if strings.HasSuffix(path, ".sh") {
				check(rel, d.Name(), string(b), map[string]bool{})
				return nil
			}
			// The manifests (not the Helm values beside them in k8s/).
			if objs, err := k8sdecode.Objects(b); err == nil && strings.HasSuffix(path, ".yaml") {
				for _, o := range objs {
					if cm, ok := o.(*corev1.ConfigMap); ok {
						for key, script := range cm.Data {
							if strings.HasSuffix(key, ".sh") {
								check(rel+": ConfigMap "+cm.Name+" "+key, key, script, containerEnv(objs, cm.Name))
							}
						}
					}
				}
			}
			if m := testOverride.Find(b); m != nil {
				t.Errorf("%s holds %s...}", rel, m)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for name := range wants {
			if seen[name] == 0 {
				t.Errorf("%s holds no %s", out, name)
			}
		}
	}
}

// containerEnv returns the names of the environment variables that the
// containers of the workloads among objs whose pods mount ConfigMap cm
// set, nil when no workload mounts it.
func containerEnv(objs []runtime.Object, cm string) map[string]bool {
	var names map[string]bool
	for _, o := range objs {
		var spec *corev1.PodSpec
		switch o := o.(type) {
		case *appsv1.Deployment:
			spec = &o.Spec.Template.Spec
		case *appsv1.DaemonSet:
			spec = &o.Spec.Template.Spec
		case *batchv1.CronJob:
			spec = &o.Spec.JobTemplate.Spec.Template.Spec
		default:
			continue
		}
		if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == cm }) {
			continue
		}
		if names == nil {
			names = map[string]bool{}
		}
		for _, c := range spec.Containers {
			for _, e := range c.Env {
				names[e.Name] = true
			}
		}
	}
	return names
}
