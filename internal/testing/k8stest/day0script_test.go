package k8stest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/render/docs"
	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// day0Block is a fenced sh block of a day-0 step, with the HTML comment
// right above it, if any (docs.Day0IfLateMarker, a host, or the
// beginning of a marked command).
type day0Block struct {
	code, marker string
}

// runnable: the block is run on a day 0 that goes as written, where the
// other steps run (not only if the VM gave up, not on another host).
func (b day0Block) runnable() bool {
	return b.marker != docs.Day0IfLateMarker && !strings.HasPrefix(b.marker, docs.Day0OnHostMarker)
}

// day0Step is a numbered step of docs/day0.md.
type day0Step struct {
	num         int
	name, title string
	blocks      []day0Block
}

var day0HeadingRE = regexp.MustCompile(`^## (\d+)\. (.+)$`)

// parseDay0 reads the numbered steps of docs/day0.md, each with the name
// of the step marker under its heading and its sh blocks, up to the next
// heading. A numbered heading without a marker is an error.
func parseDay0(doc string) ([]day0Step, error) {
	lines := strings.Split(doc, "\n")
	var steps []day0Step
	inStep := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "## ") {
			inStep = false
			m := day0HeadingRE.FindStringSubmatch(l)
			if m == nil {
				continue // not a step: before you start, the way back
			}
			num, _ := strconv.Atoi(m[1])
			if i+1 == len(lines) || !strings.HasPrefix(lines[i+1], docs.Day0StepMarker) || !strings.HasSuffix(lines[i+1], " -->") {
				return nil, fmt.Errorf("line %d: step %d (%s) has no step marker under its heading", i+1, num, m[2])
			}
			name := strings.TrimSuffix(strings.TrimPrefix(lines[i+1], docs.Day0StepMarker), " -->")
			steps = append(steps, day0Step{num: num, name: name, title: m[2]})
			inStep = true
			i++
			continue
		}
		if !strings.HasPrefix(l, "```") {
			continue
		}
		end := slices.Index(lines[i+1:], "```")
		if end < 0 {
			return nil, fmt.Errorf("line %d: an unterminated code block", i+1)
		}
		if l == "```sh" && inStep {
			b := day0Block{code: strings.Join(lines[i+1:i+1+end], "\n")}
			if i > 0 && strings.HasPrefix(lines[i-1], "<!--") {
				b.marker = lines[i-1]
			}
			steps[len(steps)-1].blocks = append(steps[len(steps)-1].blocks, b)
		}
		i += end + 1
	}
	return steps, nil
}

// day0Rule: in the commands a day 0 runs, the first match of first comes
// before any match of then (and exists when then does).
type day0Rule struct {
	first, then *regexp.Regexp
	why         string
}

func rule(first, then, why string) day0Rule {
	return day0Rule{regexp.MustCompile("(?m)" + first), regexp.MustCompile("(?m)" + then), why}
}

// day0Rules are the dependencies between the day-0 commands, each for a
// reason a step fails or deadlocks without it.
var day0Rules = []day0Rule{
	rule(`^gcloud services enable .*\bcompute\.googleapis\.com\b`, `^gcloud compute |terraform apply`,
		"Compute Engine's API is enabled before a command or the module uses it"),
	rule(`^gcloud compute images create `, `terraform apply\)?$`,
		"each image family has an image before the instance templates name it"),
	rule(`terraform apply .*-target=\S*\.`+gce.TFFirewall+`\.`+layout.TerraformImageBuilderFirewall+`\b`, `^gcloud compute instances create `,
		"the firewall rule that admits SSH to the builder VMs, and the network and NAT they run on, are applied before a builder VM is made"),
	rule(`^gcloud services enable .*\biap\.googleapis\.com\b`, `--tunnel-through-iap`,
		"Identity-Aware Proxy's API is enabled before ssh goes through it"),
	rule(`^nodegen check$`, `terraform apply`, "out/ is checked against the source before it is applied"),
	rule(`terraform init`, `terraform apply`, "the root module is initialised before it is applied"),
	rule(`terraform apply`, `^\s*gcloud secrets versions add `, "terraform apply creates the join token's secret before the first token is added to it"),
	rule(`^kubectl apply -f \S*`+regexp.QuoteMeta(layout.NodeCSRApproverPath)+`$`, `kubeadm token create`,
		"the cloud join path (what a cloud join token may request) is applied before a token can join"),
	rule(`kubeadm token create`, `^kubectl certificate approve `, "a VM asks for a certificate once it has a token"),
	rule(`^\s*kubectl label node \S+ `+regexp.QuoteMeta(model.VerifiedGroupLabel)+`=`, `create job --from=cronjob/`+regexp.QuoteMeta(model.JoinTokenRenewer.Name()),
		"the renewer runs on the autoscaler's node, selected by its verified group label"),
	rule(`^kubectl apply -f \S*`+regexp.QuoteMeta(layout.JoinTokenRenewerPath)+`$`, `create job --from=cronjob/`+regexp.QuoteMeta(model.JoinTokenRenewer.Name()),
		"the renewer's CronJob exists before a Job is made from it"),
	rule(regexp.QuoteMeta(layout.OnpremProviderIDPath)+` --dry-run$`, regexp.QuoteMeta(layout.OnpremProviderIDPath)+`$`, "the dry run shows what the script sets before it sets it"),
	rule(regexp.QuoteMeta(layout.OnpremProviderIDPath)+`$`, `^helm upgrade --install `+regexp.QuoteMeta(model.AutoscalerHelmRelease)+` `,
		"every node outside a MIG has a providerID before the autoscaler starts"),
	rule(regexp.QuoteMeta(layout.OnpremLabelNodesPath)+` --dry-run$`, regexp.QuoteMeta(layout.OnpremLabelNodesPath)+`$`, "the dry run shows what the script changes before it changes it"),
	rule(regexp.QuoteMeta(layout.OnpremLabelNodesPath)+`$`, `^helm upgrade --install `,
		"the on-prem nodes carry their group's labels and taints before the charts' pods select and tolerate them"),
}

// checkDay0 returns what is wrong with the steps: numbers not 1, 2, ...;
// names other than want, in want's order; a step without a command run
// on day 0 (here or on another host); a command run here before one it
// needs (day0Rules).
func checkDay0(steps []day0Step, want []string) []string {
	var problems []string
	var names []string
	var commands strings.Builder
	for i, s := range steps {
		if s.num != i+1 {
			problems = append(problems, fmt.Sprintf("step %q is numbered %d, want %d", s.name, s.num, i+1))
		}
		names = append(names, s.name)
		n := 0
		for _, b := range s.blocks {
			if b.marker != docs.Day0IfLateMarker {
				n++
			}
			if b.runnable() {
				commands.WriteString(b.code + "\n")
			}
		}
		if n == 0 {
			problems = append(problems, fmt.Sprintf("step %q (%s) has no command to run", s.name, s.title))
		}
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			problems = append(problems, fmt.Sprintf("step %q is missing", w))
		}
	}
	for _, n := range names {
		if !slices.Contains(want, n) {
			problems = append(problems, fmt.Sprintf("step %q is not one of %q", n, want))
		}
	}
	if len(problems) == 0 && !slices.Equal(names, want) {
		problems = append(problems, fmt.Sprintf("the steps are %q, want %q", names, want))
	}
	text := commands.String()
	for _, r := range day0Rules {
		then := r.then.FindStringIndex(text)
		if then == nil {
			continue
		}
		first := r.first.FindStringIndex(text)
		switch {
		case first == nil:
			problems = append(problems, fmt.Sprintf("no command matches %q before %q: %s", r.first, text[then[0]:then[1]], r.why))
		case first[0] >= then[0]:
			problems = append(problems, fmt.Sprintf("%q comes after %q: %s", text[first[0]:first[1]], text[then[0]:then[1]], r.why))
		}
	}
	return problems
}

// day0ScriptSteps are the steps the day-0 script test's source needs, in
// their order: no VPN, a pod network, two image families, declared
// on-prem nodes, the renewer.
var day0ScriptSteps = []string{
	docs.Day0StepAPIs, docs.Day0StepImages, docs.Day0StepTerraform, docs.Day0StepPodNetwork, docs.Day0StepFirstToken,
	docs.Day0StepManifests, docs.Day0StepProviderIDs, docs.Day0StepOnpremNodes, docs.Day0StepCharts,
	docs.Day0StepRenewer, docs.Day0StepCheck,
}

// The day-0 script test's cluster, as nodegen init is given it, and what
// its user adds: the network, a Spot GPU group (an image family of its
// own, the GPU Operator's chart), the control plane's node and on-prem GPU
// servers (declared, so that the caps count them and drift expects them).
const (
	day0Project = "day0-project"
	day0Region  = "europe-west4"
)

var day0UserFiles = map[string]string{
	// An empty project: nodegen creates the network.
	"network.cue": `cluster: gcp: network: {
	name:       "day0-vpc"
	create:     true
	subnetwork: "day0-nodes"
	subnetworkRange: "10.128.0.0/20"
	onpremRanges: ["10.20.0.0/16"]
	cniPorts: ["udp/4789"]
	egress: "cloud-nat"
}
`,
	"spot-l4.cue": `nodeGroups: "spot-l4": {
	kind:        "gce"
	description: "Cloud L4 GPU workers on Spot VMs"
	zones: ["europe-west4-a", "europe-west4-b"]
	machineType: "g2-standard-8"
	image:       "projects/day0-project/global/images/family/k8s-node-gpu-1-35"
	spot:        true
	min:         0
	max:         2
	gpu: {type: "nvidia-l4", count: 1}
	taints: [{key: "nvidia.com/gpu", value: "present", effect: "NoSchedule"}]
}
`,
	"control-plane.cue": `cluster: controlPlaneNodes: "cp-1": {cpu: 8, memoryGiB: 32}
`,
	"pod-network.cue": `cluster: podNetwork: podCIDR: "192.168.0.0/16"
`,
	"onprem-gpu.cue": `nodeGroups: "onprem-gpu": {
	kind:        "onprem"
	description: "On-prem L4 servers"
	gpu: {type: "nvidia-l4", count: 4}
	nodes: {
		"gpu-01": {cpu: 64, memoryGiB: 512}
		"gpu-02": {cpu: 64, memoryGiB: 512}
	}
	labels: {"example.com/pool": "gpu-onprem"}
	taints: [{key: "nvidia.com/gpu", value: "present", effect: "NoSchedule"}]
}
`,
}

// day0VPNNetwork is network.cue with an HA VPN to one on-prem gateway.
const day0VPNNetwork = `cluster: gcp: network: {
	name:       "day0-vpc"
	create:     true
	subnetwork: "day0-nodes"
	onpremRanges: ["10.20.0.0/16"]
	cniPorts: ["udp/4789"]
	egress: "cloud-nat"
	subnetworkRange: "10.128.0.0/20"
	vpn: {
		cloudRouterASN: 64514
		onpremASN:      65010
		peerGateways: [{name: "vpn-gw-a", address: "203.0.113.10"}]
		haVpnAddresses: ["198.51.100.20", "198.51.100.21"]
		tunnels: [
			{insideRange: "169.254.10.0/30", sharedSecret: secret: "day0-vpn-tunnel0"},
			{insideRange: "169.254.11.0/30", sharedSecret: secret: "day0-vpn-tunnel1"},
		]
	}
}
`

// day0Init makes a cluster as a new user does, in work: nodegen init in
// an empty directory, the user's files beside its own, nodegen gen; it
// returns the source.
func day0Init(t *testing.T, work string, files map[string]string) *model.Source {
	t.Helper()
	nodegen := func(args ...string) {
		t.Helper()
		var out bytes.Buffer
		if code := cli.Main(args, strings.NewReader(""), &out, &out); code != 0 {
			t.Fatalf("nodegen %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
		}
	}
	dir := filepath.Join(work, "nodegroups")
	nodegen("init", "--dir", dir, "--name", "day0", "--project", day0Project, "--region", day0Region,
		"--control-plane-endpoint", "10.20.0.10:6443", "--kubernetes-version", "1.35.2",
		"--ca-cert-hash", "sha256:8f3c1f3b2a6a1c4d9e0b7f6a5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d")
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nodegen("gen", "--source", dir, "--out", filepath.Join(work, "out"))
	l, err := pipeline.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l.Fleet.Clusters[0]
}

// day0Sections splits docs/day0.md into what comes before the first step,
// the steps, and what comes after the last.
func day0Sections(t *testing.T, doc string) (head string, steps []string, tail string) {
	t.Helper()
	parts := regexp.MustCompile(`(?m)^## `).Split(doc, -1)
	head = parts[0]
	for _, p := range parts[1:] {
		p = "## " + p
		if day0HeadingRE.MatchString(strings.SplitN(p, "\n", 2)[0]) {
			if tail != "" {
				t.Fatal("a numbered step after the steps")
			}
			steps = append(steps, p)
		} else if len(steps) == 0 {
			head += p
		} else {
			tail += p
		}
	}
	return head, steps, tail
}

// joinDay0 puts the sections together again, the steps renumbered.
func joinDay0(head string, steps []string, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	for i, s := range steps {
		b.WriteString(day0HeadingRE.ReplaceAllString(strings.SplitN(s, "\n", 2)[0], fmt.Sprintf("## %d. $2", i+1)) + "\n" + strings.SplitN(s, "\n", 2)[1])
	}
	b.WriteString(tail)
	return b.String()
}

// TestDay0ScriptChecker: the steps of docs/day0.md as nodegen renders it
// for the day-0 script test's source pass the checker TestDay0Script plays
// them with, and the doc with a step removed, two steps swapped (each
// renumbered), a step marker lost, or a command moved after one that
// needs it does not.
func TestDay0ScriptChecker(t *testing.T) {
	render := func(t *testing.T, files map[string]string) string {
		t.Helper()
		work := t.TempDir()
		day0Init(t, work, files)
		b, err := os.ReadFile(filepath.Join(work, "out", layout.Day0DocsPath))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	check := func(doc string, want []string) []string {
		steps, err := parseDay0(doc)
		if err != nil {
			return []string{err.Error()}
		}
		return checkDay0(steps, want)
	}
	// With a VPN: its keys before the apply, the gateways (on their hosts)
	// after it.
	vpn := maps.Clone(day0UserFiles)
	vpn["network.cue"] = day0VPNNetwork
	withVPN := slices.Concat(day0ScriptSteps[:2], []string{docs.Day0StepVPNKeys, docs.Day0StepTerraform, docs.Day0StepVPN}, day0ScriptSteps[3:])
	if p := check(render(t, vpn), withVPN); len(p) > 0 {
		t.Errorf("%s with a VPN:\n%s", layout.Day0DocsPath, strings.Join(p, "\n"))
	}
	doc := render(t, day0UserFiles)
	if p := check(doc, day0ScriptSteps); len(p) > 0 {
		t.Fatalf("%s as rendered:\n%s", layout.Day0DocsPath, strings.Join(p, "\n"))
	}
	head, steps, tail := day0Sections(t, doc)
	if len(steps) != len(day0ScriptSteps) {
		t.Fatalf("%d steps, want %d", len(steps), len(day0ScriptSteps))
	}
	mutants := map[string]string{}
	for i := range steps {
		mutants["without step "+day0ScriptSteps[i]] = joinDay0(head, slices.Delete(slices.Clone(steps), i, i+1), tail)
		if i+1 < len(steps) {
			swapped := slices.Clone(steps)
			swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
			mutants["step "+day0ScriptSteps[i+1]+" before "+day0ScriptSteps[i]] = joinDay0(head, swapped, tail)
		}
	}
	replace := func(what, old, new string) {
		t.Helper()
		if !strings.Contains(doc, old) {
			t.Fatalf("%s: %q is not in the doc", what, old)
		}
		mutants[what] = strings.Replace(doc, old, new, 1)
	}
	approver := "kubectl apply -f out/" + layout.NodeCSRApproverPath + "\n"
	replace("the approver applied with the manifests", approver, "")
	mutants["the approver applied with the manifests"] = strings.Replace(mutants["the approver applied with the manifests"],
		"kubectl apply -f out/"+layout.TaintRemoverPath+"\n", approver+"kubectl apply -f out/"+layout.TaintRemoverPath+"\n", 1)
	replace("no image made", "gcloud compute images create", "gcloud compute images list")
	mutants["no image made"] = strings.ReplaceAll(doc, "gcloud compute images create", "gcloud compute images list")
	replace("no nodegen check", "```sh\nnodegen check\n", "```sh\n")
	replace("the builders' firewall rule not applied first", "terraform apply -target=", "terraform plan -target=")
	replace("IAP's API not enabled", " iap.googleapis.com", "")
	replace("the on-prem nodes labelled without a dry run first",
		"bash out/"+layout.OnpremLabelNodesPath+" --dry-run\nbash out/"+layout.OnpremLabelNodesPath+"\n",
		"bash out/"+layout.OnpremLabelNodesPath+"\nbash out/"+layout.OnpremLabelNodesPath+" --dry-run\n")
	replace("a step marker lost", docs.Day0StepMarker+docs.Day0StepManifests+" -->\n", "")
	replace("the autoscaler's nodes not labelled", "  kubectl label node", "  kubectl get node")
	for what, m := range mutants {
		if m == doc {
			t.Fatalf("%s: the mutant is the doc", what)
		}
		if p := check(m, day0ScriptSteps); len(p) == 0 {
			t.Errorf("%s: the checker passes it", what)
		} else {
			t.Logf("%s: %s", what, p[0])
		}
	}
}

// day0Helm is the helm stand-in: helm repo add and update, and helm
// upgrade --install of a chart of an added repository with a values file
// that exists, into a namespace that exists (or --create-namespace). The
// Cluster Autoscaler's release also needs every Node to have a
// providerID, as the autoscaler's GCE provider does (else it scales
// nothing). Each release is recorded under STUB_STATE/helm.
const day0Helm = `#!/usr/bin/env bash
set -euo pipefail
unexpected() { echo "stub helm: unexpected call: helm ${call}" >&2; exit 64; }
call="$*"
mkdir -p "${STUB_STATE}/helm/repos" "${STUB_STATE}/helm/releases"
case "$1 ${2-}" in
"repo add")
	(($# == 4)) || unexpected
	[[ "$4" == https://* ]] || unexpected
	printf '%s\n' "$4" >"${STUB_STATE}/helm/repos/$3"
	;;
"repo update")
	(($# == 2)) || unexpected
	;;
"upgrade --install")
	release="$3" chart="$4" version="" namespace="" create=false values=()
	shift 4
	while (($#)); do
		case "$1" in
		--version) version="$2"; shift 2 ;;
		--namespace) namespace="$2"; shift 2 ;;
		--create-namespace) create=true; shift ;;
		-f) values+=("$2"); shift 2 ;;
		*) unexpected ;;
		esac
	done
	[[ -n "${version}" && -n "${namespace}" ]] || unexpected
	[[ -e "${STUB_STATE}/helm/repos/${chart%%/*}" ]] || { echo "Error: repo ${chart%%/*} not found" >&2; exit 1; }
	for v in "${values[@]}"; do
		[[ -f "${v}" ]] || { echo "Error: open ${v}: no such file or directory" >&2; exit 1; }
	done
	${create} || kubectl get namespace "${namespace}" -o name >/dev/null ||
		{ echo "Error: create: failed to create: namespaces \"${namespace}\" not found" >&2; exit 1; }
	if [[ "${chart##*/}" == cluster-autoscaler ]]; then
		none="$(kubectl get nodes -o go-template='{{range .items}}{{if not .spec.providerID}}{{.metadata.name}} {{end}}{{end}}')"
		[[ -z "${none}" ]] || { echo "stub helm: the Cluster Autoscaler's GCE provider would fail on the nodes without a providerID: ${none}" >&2; exit 1; }
	fi
	printf '%s %s %s %s\n' "${chart}" "${version}" "${namespace}" "${values[*]}" >"${STUB_STATE}/helm/releases/${release}"
	echo "Release \"${release}\" has been upgraded. Happy Helming!"
	;;
*) unexpected ;;
esac
`

// day0Play is a day 0 being played.
type day0Play struct {
	src   *model.Source
	work  string // where the person runs the steps: nodegroups/ and out/
	state string // the stand-ins' state
	cp    *testcp.ControlPlane
	f     *fakeGCP
	p     *day0Person
	migs  string
	vms   map[string]*vm  // the cloud VMs booted, by name
	order []string        // the VMs in boot order
	jobs  map[string]bool // the renewer's Jobs run
}

// TestDay0Script plays docs/day0.md as a script, from nodegen init in an
// empty directory: the init's source, with a network (Cloud NAT) and two
// declared on-prem GPU servers added as a user adds them, rendered with
// nodegen gen; then each numbered step's commands, in the doc's order, as
// the person runs them from the directory that holds nodegroups/ and
// out/, against a real kube-apiserver configured as kubeadm's, the fakes
// of the metadata server and Secret Manager, and stand-ins of the tools
// the machine lacks or must not reach the cloud with: gcloud (APIs,
// builder VMs, images, MIG listings, secret versions), terraform (the
// root module and out/terraform read with hclparse and checked against
// the provider's schema), helm, and ssh, sudo and kubeadm as in
// TestDayZero; kubectl is the real one, nodegen this test binary. The
// steps' names and order are checked first (checkDay0). After the apply
// the MIGs' VMs boot with the startup script their template carries and
// wait for a token; the first token, the listing and approval of their
// requests join them, and their kubelets register; the on-prem servers
// and the control plane are Nodes from the start. It ends with the cloud
// nodes joined and verified, the on-prem nodes labelled and tainted as
// their group says, the autoscaler installed with every Node's providerID
// set, the renewer's first Job run, and nodegen drift finding nothing.
func TestDay0Script(t *testing.T) {
	started := time.Now()
	cp := testcp.StartWith(t, testcp.Options{Production: true})
	cp.StartControllerManager(t, testcp.CSRSigningController, testcp.CSRApprovingController)
	work := t.TempDir()
	src := day0Init(t, work, day0UserFiles)
	doc, err := os.ReadFile(filepath.Join(work, "out", layout.Day0DocsPath))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseDay0(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	if p := checkDay0(steps, day0ScriptSteps); len(p) > 0 {
		t.Fatalf("%s:\n%s", layout.Day0DocsPath, strings.Join(p, "\n"))
	}

	d := &day0Play{src: src, work: work, state: t.TempDir(), cp: cp, migs: t.TempDir(),
		vms: map[string]*vm{}, jobs: map[string]bool{}}
	d.f = newFakeGCP(t, src.Cluster.GCP.Project, src.Cluster.JoinToken.SecretManager.Secret)
	d.p = newDay0Person(t, cp, d.f, d.migs, work)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"nodegen", "terraform"} {
		if err := os.Symlink(exe, filepath.Join(d.p.bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d.p.bin, "helm"), []byte(day0Helm), 0o755); err != nil {
		t.Fatal(err)
	}
	d.p.env = append(d.p.env, "STUB_STATE="+d.state, day0ToolEnv+"=1")
	d.existingNodes(t)
	// The cluster runs Calico with the tigera-operator already: its CRDs.
	installCalicoCRDs(t, cp.Admin())

	for _, s := range steps {
		stepStart := time.Now()
		for i := 0; i < len(s.blocks); i++ {
			b := s.blocks[i]
			switch {
			case b.marker == docs.Day0IfLateMarker:
				// Only for a VM that gave up: none has.
				for name, v := range d.vms {
					select {
					case r := <-v.done:
						t.Fatalf("VM %s gave up before its request was approved:\n%s", name, r.log)
					default:
					}
				}
			case !b.runnable():
				t.Fatalf("step %s: a block for another host (%s): this source has none", s.name, b.marker)
			case b.marker == docs.Day0ListCSRsBegin:
				if i+1 == len(s.blocks) || s.blocks[i+1].marker != docs.Day0ApproveCSRBegin {
					t.Fatalf("step %s: the listing of the requests is not followed by their approval", s.name)
				}
				d.approveAndJoin(t, b.code, s.blocks[i+1].code)
				i++
			case b.marker == docs.Day0ApproveCSRBegin:
				t.Fatalf("step %s: an approval before the requests are listed", s.name)
			default:
				d.run(t, b.code)
			}
		}
		d.afterStep(t, s.name)
		t.Logf("step %d, %s: %s", s.num, s.name, time.Since(stepStart).Round(time.Millisecond))
	}
	t.Logf("day 0 played in %s (from nodegen init)", time.Since(started).Round(time.Millisecond))
}

// run runs a block as the person does and waits for it, while the
// cluster does its part: a Job made from the renewer's CronJob is run as
// its pod would run it, then marked complete.
func (d *day0Play) run(t *testing.T, code string) string {
	t.Helper()
	cmd := d.p.command(code)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(90 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v\n%s", code, err, out.String())
			}
			if tokenRE.Match(out.Bytes()) {
				t.Errorf("the command shows a token:\n%s", out.String())
			}
			t.Logf("$ %s\n%s", code, out.String())
			return out.String()
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("%s: still running after 90s:\n%s", code, out.String())
		case <-time.After(300 * time.Millisecond):
			if d.cp != nil {
				d.runJobs(t)
			}
		}
	}
}

// runJobs runs each Job made from the renewer's CronJob not run yet: the
// renewer's script as its pod runs it, as the renewer's service account,
// then the Job's status as the Job controller writes it.
func (d *day0Play) runJobs(t *testing.T) {
	t.Helper()
	jobs, err := clientOf(t, d.cp.Admin()).BatchV1().Jobs(model.WorkloadNamespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the Jobs: %v", err)
	}
	for _, j := range jobs.Items {
		if d.jobs[j.Name] || len(j.OwnerReferences) != 1 || j.OwnerReferences[0].Kind != "CronJob" || j.OwnerReferences[0].Name != model.JoinTokenRenewer.Name() {
			continue
		}
		d.jobs[j.Name] = true
		manifest, err := os.ReadFile(filepath.Join(d.work, "out", layout.JoinTokenRenewerPath))
		if err != nil {
			t.Fatal(err)
		}
		e := &renewerEnv{cp: d.cp, src: d.src, sa: d.cp.ServiceAccount(t, model.WorkloadNamespace, model.JoinTokenRenewer.Name())}
		e.renewal = d.src.Renewal()
		e.script, e.env = renewerScript(t, manifest)
		if code, stderr := e.run(t, d.f); code != 0 {
			t.Fatalf("job %s: the renewer failed (exit %d):\n%s", j.Name, code, stderr)
		}
		now := time.Now().UTC().Format(time.RFC3339)
		start := now
		if j.Status.StartTime != nil {
			start = j.Status.StartTime.UTC().Format(time.RFC3339)
		}
		cond := func(typ, reason string) string {
			return `{"type":"` + typ + `","status":"True","reason":"` + reason + `","lastProbeTime":"` + now + `","lastTransitionTime":"` + now + `"}`
		}
		status := `{"status":{"startTime":"` + start + `","completionTime":"` + now + `","succeeded":1,"active":0,"ready":0,"terminating":0,` +
			`"uncountedTerminatedPods":{},"conditions":[` + cond("SuccessCriteriaMet", "CompletionsReached") + `,` + cond("Complete", "CompletionsReached") + `]}}`
		if _, _, err := kubectl(t, d.cp.Admin(), "", "patch", "job", j.Name, "-n", model.WorkloadNamespace, "--subresource=status", "--type=merge", "-p", status); err != nil {
			t.Fatal(err)
		}
	}
}

// existingNodes creates the Nodes the cluster has before day 0, as their
// kubelets registered them at kubeadm join: the control plane's, and the
// on-prem groups' declared servers (Ready, their GPUs allocatable), none
// with a providerID or its group's labels and taints.
func (d *day0Play) existingNodes(t *testing.T) {
	t.Helper()
	for name := range d.src.Cluster.ControlPlaneNodes {
		d.createNode(t, d.cp.Admin(), name, map[string]string{"node-role.kubernetes.io/control-plane": ""},
			[]corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}, "", 0)
	}
	for _, g := range d.src.Groups() {
		if g.Kind != model.KindOnPrem {
			continue
		}
		gpus := 0
		if g.GPU != nil {
			gpus = g.GPU.Count
		}
		for name := range g.Nodes {
			d.createNode(t, d.cp.Admin(), name, nil, nil, "", gpus)
		}
	}
}

// createNode creates Node name as user, as a kubelet registers it: with
// the labels a kubelet gives itself besides labels, and its status Ready
// (the API server keeps the status a Node is created with).
func (d *day0Play) createNode(t *testing.T, u *testcp.User, name string, labels map[string]string, taints []corev1.Taint, providerID string, gpus int) {
	t.Helper()
	n := corev1.Node{}
	n.APIVersion, n.Kind, n.Name = "v1", "Node", name
	n.Labels = map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
	}
	for k, v := range labels {
		n.Labels[k] = v
	}
	n.Spec.Taints, n.Spec.ProviderID = taints, providerID
	// The status the kubelet registers with, its node Ready.
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	if gpus > 0 {
		capacity["nvidia.com/gpu"] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	now := metav1.Now()
	n.Status.Capacity, n.Status.Allocatable = capacity, capacity
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}}
	b, _ := json.Marshal(n)
	if _, _, err := kubectl(t, u, string(b), "create", "-f", "-"); err != nil {
		t.Fatalf("registering Node %s: %v", name, err)
	}
}

// boot starts the VMs of the MIGs the apply made, each with the startup
// script of its template, and lists them in their MIG.
func (d *day0Play) boot(t *testing.T, a *tfApply) {
	t.Helper()
	suffixes := []string{"b7x2", "q4m9", "k2pd", "w8zt"}
	for i, m := range a.MIGs {
		script, err := os.ReadFile(m.StartupScript)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for j := range m.TargetSize {
			name := m.BaseInstanceName + "-" + suffixes[(i+j)%len(suffixes)]
			names = append(names, name)
			d.vms[name] = bootVM(t, d.f, script, d.p.path, d.cp, name, m.Zone)
			d.order = append(d.order, name)
		}
		list := ""
		for _, n := range names {
			list += n + "\n"
		}
		if err := os.WriteFile(filepath.Join(d.migs, m.Name), []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// approveAndJoin lists and approves each VM's request with the docs'
// commands; each VM then joins, and its kubelet registers its Node as
// its JoinConfiguration says.
func (d *day0Play) approveAndJoin(t *testing.T, list, approve string) {
	t.Helper()
	if len(d.order) == 0 {
		t.Fatal("the requests are listed before any VM booted")
	}
	v := d.f.snapshot()
	if len(v) != 1 {
		t.Fatalf("%d versions of the secret when the requests are listed, want the first token", len(v))
	}
	token := strings.TrimSuffix(string(v[0].Payload), "\n")
	for _, name := range d.order {
		d.p.approveVM(t, list, approve, name)
	}
	for _, name := range d.order {
		r := d.vms[name].wait(t)
		r.joined(t, token)
		d.register(t, name, r)
	}
}

// register creates the VM's Node as its kubelet does, with the name,
// labels, taints and providerID of the JoinConfiguration kubeadm was
// given, with the kubelet's credentials.
func (d *day0Play) register(t *testing.T, name string, r vmResult) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.stub, "join-configuration.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubeadm.DecodeJoinConfiguration(b)
	if err != nil {
		t.Fatalf("the JoinConfiguration of VM %s: %v", name, err)
	}
	if c.NodeRegistration.Name != name {
		t.Fatalf("VM %s joins as %q", name, c.NodeRegistration.Name)
	}
	labels := map[string]string{}
	if l, ok := c.ExtraArg("node-labels"); ok {
		for _, kv := range strings.Split(l, ",") {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = v
		}
	}
	providerID, _ := c.ExtraArg("provider-id")
	d.createNode(t, d.cp.Node(t, name), name, labels, c.NodeRegistration.Taints, providerID, 0)
}

// afterStep checks what the step did, and does what the world does
// after it: the apply boots the MIGs' VMs.
func (d *day0Play) afterStep(t *testing.T, name string) {
	t.Helper()
	src := d.src
	switch name {
	case docs.Day0StepImages:
		images, _ := model.BuildableImages(src.NodeImages())
		for _, im := range images {
			d.checkRecipe(t, im)
		}
	case docs.Day0StepTerraform:
		b, err := os.ReadFile(filepath.Join(d.state, "terraform", "apply.json"))
		if err != nil {
			t.Fatalf("the step applied nothing: %v", err)
		}
		var a tfApply
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		d.checkApply(t, &a)
		d.boot(t, &a)
		// The VMs find no token yet and wait.
		eventually(t, 30*time.Second, "the VMs asking Secret Manager again after 404s", func() string {
			if n := d.f.count("/versions/latest:access"); n < 2*len(d.order) {
				return fmt.Sprintf("%d requests for the latest version", n)
			}
			return ""
		})
	case docs.Day0StepFirstToken:
		versions := d.f.snapshot()
		if len(versions) != 1 {
			t.Fatalf("%d versions of the secret after the first token, want 1", len(versions))
		}
		for _, vm := range d.order {
			out, _, err := kubectl(t, d.cp.Admin(), "", "get", "node", vm, "-o", "jsonpath={.metadata.labels."+strings.ReplaceAll(model.VerifiedGroupLabel, ".", `\.`)+"}")
			if err != nil || out != src.Cluster.Autoscaler.NodeGroup {
				t.Errorf("Node %s has %s=%q (%v), want %s", vm, model.VerifiedGroupLabel, out, err, src.Cluster.Autoscaler.NodeGroup)
			}
		}
	case docs.Day0StepPodNetwork:
		// The Installation holds the pod MTU and pool nodegen computed.
		m := src.Cluster.PodMTU()
		out, _, err := kubectl(t, d.cp.Admin(), "", "get", "installation", "default", "-o",
			"jsonpath={.spec.calicoNetwork.mtu} {.spec.calicoNetwork.ipPools[0].cidr} {.spec.calicoNetwork.ipPools[0].encapsulation}")
		if want := fmt.Sprintf("%d %s %s", m.MTU, src.Cluster.PodNetwork.PodCIDR, src.Cluster.PodNetwork.Encapsulation); err != nil || out != want {
			t.Errorf("the Installation after the step: %q (%v), want %q", out, err, want)
		}
	case docs.Day0StepProviderIDs:
		for _, n := range d.nodes(t) {
			if n.Spec.ProviderID == "" {
				t.Errorf("Node %s has no providerID", n.Name)
			}
		}
	case docs.Day0StepOnpremNodes:
		byName := map[string]corev1.Node{}
		for _, n := range d.nodes(t) {
			byName[n.Name] = n
		}
		for _, g := range src.Groups() {
			if g.Kind != model.KindOnPrem {
				continue
			}
			for name := range g.Nodes {
				n := byName[name]
				for k, v := range g.NodeLabels {
					if n.Labels[k] != v {
						t.Errorf("on-prem Node %s: label %s=%q, want %q", name, k, n.Labels[k], v)
					}
				}
				for _, want := range g.Taints {
					if !slices.ContainsFunc(n.Spec.Taints, func(h corev1.Taint) bool {
						return h.Key == want.Key && h.Value == want.Value && string(h.Effect) == want.Effect
					}) {
						t.Errorf("on-prem Node %s: no taint %s (has %v)", name, want, n.Spec.Taints)
					}
				}
			}
		}
	case docs.Day0StepCharts:
		for _, r := range []struct{ release, want string }{
			{model.AutoscalerHelmRelease, model.AutoscalerChartRepoName + "/" + model.AutoscalerChart + " " + model.AutoscalerChartVersion + " " + src.Cluster.Autoscaler.Namespace + " out/" + layout.AutoscalerValuesPath},
			{docs.GPUOperatorRelease, docs.GPUOperatorChartRepoName + "/" + docs.GPUOperatorChart + " " + docs.GPUOperatorChartVersion + " " + docs.GPUOperatorNamespace + " out/" + layout.GPUOperatorValuesPath},
		} {
			b, err := os.ReadFile(filepath.Join(d.state, "helm", "releases", r.release))
			if err != nil {
				t.Errorf("release %s is not installed: %v", r.release, err)
			} else if strings.TrimSpace(string(b)) != r.want {
				t.Errorf("release %s is %q, want %q", r.release, strings.TrimSpace(string(b)), r.want)
			}
		}
	case docs.Day0StepRenewer:
		if len(d.jobs) != 1 {
			t.Errorf("%d Jobs of the renewer run, want 1", len(d.jobs))
		}
		if v := d.f.snapshot(); len(v) != 2 || v[0].State != "ENABLED" || v[1].State != "ENABLED" {
			t.Errorf("after the renewer's first run: %v, want the first token and the renewer's, enabled", states(v))
		}
	}
}

// nodes returns the cluster's Nodes.
func (d *day0Play) nodes(t *testing.T) []corev1.Node {
	t.Helper()
	out, _, err := kubectl(t, d.cp.Admin(), "", "get", "nodes", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var l corev1.NodeList
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// checkRecipe checks the recipe the builder VM of im's family ran before
// its image was made: shellcheck (when installed) finds nothing, and it
// installs what the source says.
func (d *day0Play) checkRecipe(t *testing.T, im model.NodeImage) {
	t.Helper()
	p := filepath.Join(d.state, "images", im.Project, im.Family, "recipe.sh")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("no image of family %s was made from a builder that ran its recipe: %v", im.Family, err)
	}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		if out, err := exec.Command(sc, "-s", "bash", p).CombinedOutput(); err != nil {
			t.Errorf("shellcheck of family %s's recipe: %v\n%s", im.Family, err, out)
		}
	} else {
		t.Log("no shellcheck on PATH: the recipe is only parsed by bash -n")
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^readonly ([A-Z_]+)=(\S+)$`).FindAllStringSubmatch(string(b), -1) {
		vars[m[1]] = m[2]
	}
	minor := im.KubernetesVersion[:strings.LastIndex(im.KubernetesVersion, ".")]
	for k, want := range map[string]string{
		"KUBERNETES_VERSION": im.KubernetesVersion, "KUBERNETES_MINOR": "v" + minor,
		"IMAGE_FAMILY": im.Family, "GPU_HOST": strconv.FormatBool(im.GPU),
	} {
		if vars[k] != want {
			t.Errorf("family %s's recipe: %s=%q, want %q", im.Family, k, vars[k], want)
		}
	}
	if !strings.HasPrefix(vars["KUBERNETES_PACKAGE_VERSION"], im.KubernetesVersion+"-") {
		t.Errorf("family %s's recipe installs packages %q, not of Kubernetes %s", im.Family, vars["KUBERNETES_PACKAGE_VERSION"], im.KubernetesVersion)
	}
}

// checkApply checks what the apply made against the source: the
// provider's project and region, the join token's secret, the firewall
// rules from the on-prem ranges to the kubelet and the CNI and between
// the nodes, the Cloud NAT, and one MIG per zone of each cloud group at
// its fixed or minimum size.
func (d *day0Play) checkApply(t *testing.T, a *tfApply) {
	t.Helper()
	c := &d.src.Cluster
	n := c.GCP.Network
	if a.Dir != filepath.Join(d.work, "out", "terraform", "root") {
		t.Errorf("applied in %s, not the root module out/terraform/root", a.Dir)
	}
	if a.Project != c.GCP.Project || a.Region != c.GCP.Region {
		t.Errorf("the provider's project and region are %s, %s; want %s, %s", a.Project, a.Region, c.GCP.Project, c.GCP.Region)
	}
	if !slices.Equal(a.Secrets, []string{c.JoinToken.SecretManager.Secret}) {
		t.Errorf("the apply creates secrets %q, want the join token's %q", a.Secrets, c.JoinToken.SecretManager.Secret)
	}
	var fromOnprem, between bool
	for _, fw := range a.Firewalls {
		kubelet := slices.Contains(fw.Allow, "tcp:"+strconv.Itoa(model.KubeletPort))
		cni := true
		for _, p := range n.CNIPorts {
			proto, port, _ := strings.Cut(p, "/")
			cni = cni && slices.Contains(fw.Allow, proto+":"+port)
		}
		switch {
		case kubelet && cni && slices.Equal(fw.SourceRanges, n.OnpremRanges):
			fromOnprem = true
		case cni && !kubelet && len(fw.SourceRanges) == 0:
			between = true
		}
	}
	if !fromOnprem || !between {
		t.Errorf("firewall rules %+v: want one from %v to the kubelet and the CNI (%v), and one for the CNI between the nodes", a.Firewalls, n.OnpremRanges, n.CNIPorts)
	}
	if len(a.NATs) != 1 {
		t.Errorf("Cloud NATs %v, want one", a.NATs)
	}
	// The project had no network: the apply created it and its
	// subnetwork, before what names them (the stand-in refuses a module
	// given a network it creates other than by reference).
	if want := []string{"network/" + n.Name, "subnetwork/" + n.Subnetwork}; !slices.Equal(a.Networks, want) {
		t.Errorf("the apply creates networks %v, want %v", a.Networks, want)
	}
	var migs []string
	for _, m := range a.MIGs {
		migs = append(migs, fmt.Sprintf("%s %s %d", m.Name, m.Zone, m.TargetSize))
	}
	var want []string
	for _, g := range d.src.CloudGroups() {
		size := g.Max // a fixed size
		if g.Autoscaled() {
			size = g.Min
		}
		for _, z := range g.Zones {
			want = append(want, fmt.Sprintf("%s %s %d", c.MIGName(g, z), z, size))
		}
	}
	slices.Sort(migs)
	slices.Sort(want)
	if !slices.Equal(migs, want) {
		t.Errorf("the apply makes MIGs %q, want %q", migs, want)
	}
}
