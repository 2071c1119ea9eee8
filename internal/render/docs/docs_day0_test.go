package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/render/docs"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestDay0Order checks that docs/day0.md gives the steps in the order
// that does not deadlock (the cloud join path and the node CSR approver
// before the first token, a token of the cloud join group only, the
// autoscaler's VM approved by hand before it is waited for), every
// command as it is run
// (set-provider-id.sh's --dry-run shown), the node images built before
// the module names them, with the charts pinned and
// their repositories added, and one path for the priority expander (the
// chart's).
func TestDay0Order(t *testing.T) {
	_, files := testsrc.Example(t)
	doc := string(files[layout.Day0DocsPath])
	order := []string{
		"gcloud services enable compute.googleapis.com iam.googleapis.com cloudresourcemanager.googleapis.com secretmanager.googleapis.com",
		"gcloud compute ssh k8s-node-1-35-builder --project=acme-hybrid-ai --zone=us-central1-a -- sudo bash -s < out/images/k8s-node-1-35/build.sh",
		"gcloud compute images create k8s-node-1-35-$(date +%Y%m%d%H%M) --project=acme-hybrid-ai \\\n  --family=k8s-node-1-35 ",
		"gcloud compute images create k8s-node-gpu-1-35-$(date +%Y%m%d%H%M) --project=acme-hybrid-ai \\\n  --family=k8s-node-gpu-1-35 ",
		"terraform apply",
		"kubectl apply -f out/k8s/node-csr-approver.yaml",
		"sudo kubeadm token create --ttl 24h --groups " + model.CloudBootstrapGroup + " ",
		"gcloud secrets versions add kubeadm-join-token --project=acme-hybrid-ai --data-file=-",
		"gcloud compute instance-groups managed list-instances hybrid-ai-autoscaler-us-central1-a",
		"kubectl certificate approve",
		"kubectl wait --for=condition=Ready node -l nodegen.dev/node-group=autoscaler",
		"kubectl apply -f out/k8s/taint-remover.yaml",
		"kubectl apply -f out/k8s/node-lifecycle.yaml",
		"kubectl apply -f out/k8s/join-token-renewer.yaml",
		"providerID",
		"bash out/onprem/set-provider-id.sh --dry-run\nbash out/onprem/set-provider-id.sh\n",
		"helm repo add autoscaler https://kubernetes.github.io/autoscaler",
		"helm repo add nvidia https://helm.ngc.nvidia.com/nvidia",
		"helm upgrade --install cluster-autoscaler autoscaler/cluster-autoscaler --version 9.59.0",
		"helm upgrade --install gpu-operator nvidia/gpu-operator --version v26.7.0",
		docs.JoinTokenFirstRunCommand(),
		"## When renewal lapsed",
	}
	at := 0
	for _, s := range order {
		i := strings.Index(doc[at:], s)
		if i < 0 {
			t.Fatalf("%s: %q missing or out of order (after byte %d)\n%s", layout.Day0DocsPath, s, at, doc)
		}
		at += i + len(s)
	}
	if n := strings.Count(doc, "kubectl apply -f out/k8s/node-csr-approver.yaml"); n != 1 {
		t.Errorf("the day-0 steps apply the node CSR approver %d times, want once (with the first token)", n)
	}
	if strings.Contains(doc, "system:bootstrappers:kubeadm:default-node-token --") || strings.Count(doc, "kubeadm token create") != strings.Count(doc, "kubeadm token create --ttl 24h --groups "+model.CloudBootstrapGroup+" ") {
		t.Errorf("a kubeadm token create of the day-0 steps is not of the cloud join group only")
	}
	if strings.Contains(doc, "kubectl apply -f out/cluster-autoscaler/priority-expander.yaml") {
		t.Errorf("the day-0 steps apply the priority expander's file as well as the chart's expanderPriorities")
	}
	for _, want := range []string{"roles/compute.instanceAdmin.v1", "roles/iam.serviceAccountUser", "roles/secretmanager.admin",
		"NVIDIA T4 (`nvidia-tesla-t4`) GPUs: 8 on demand, 12 Spot",
		"`GPUS_ALL_REGIONS`, 20 GPUs", "gcloud compute project-info describe --project=acme-hybrid-ai"} {
		if !strings.Contains(doc, want) {
			t.Errorf("%s lacks %q", layout.Day0DocsPath, want)
		}
	}
}

// TestDay0OnpremNodes: an onprem group that declares its nodes gets
// out/onprem/label-onprem-nodes.sh, which gives each its group's labels
// and taints, and a day-0 step that runs it (--dry-run first) after the
// providerIDs and before the charts; a source that declares none gets
// neither. Without the control plane's nodes declared, the prerequisites
// ask for them.
func TestDay0OnpremNodes(t *testing.T) {
	_, without := testsrc.Example(t)
	if _, ok := without[layout.OnpremLabelNodesPath]; ok {
		t.Errorf("%s rendered for onprem groups that declare no nodes", layout.OnpremLabelNodesPath)
	}
	if strings.Contains(string(without[layout.Day0DocsPath]), docs.Day0StepMarker+docs.Day0StepOnpremNodes+" ") {
		t.Errorf("%s has the on-prem nodes' step without declared nodes", layout.Day0DocsPath)
	}
	l, err := source.Load(testsrc.Copy(t, map[string]string{"nodes.cue": `nodeGroups: "onprem-gpu": nodes: {
	"a100-02": {cpu: 128, memoryGiB: 1024}
	"a100-01": {cpu: 128, memoryGiB: 1024}
}
`}))
	if err != nil {
		t.Fatal(err)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	script := string(files[layout.OnpremLabelNodesPath])
	calls := "\nnode a100-01 onprem-gpu 'example.com/location=onprem' 'example.com/pool=gpu-onprem' 'nodegen.dev/node-group=onprem-gpu' -- 'nvidia.com/gpu=present:NoSchedule'\n" +
		"node a100-02 onprem-gpu 'example.com/location=onprem' 'example.com/pool=gpu-onprem' 'nodegen.dev/node-group=onprem-gpu' -- 'nvidia.com/gpu=present:NoSchedule'\nfinish\n"
	if !strings.HasSuffix(script, calls) {
		t.Errorf("%s does not end in the declared nodes' calls, by name:\n%s", layout.OnpremLabelNodesPath, script)
	}
	doc := string(files[layout.Day0DocsPath])
	// The source declares the on-prem nodes and not the control plane's,
	// which drift then reports: the prerequisites say to declare it.
	if !strings.Contains(doc, "- Nodes outside the MIGs: the source declares on-prem nodes but not the control plane's. Declare each control-plane node in `cluster.controlPlaneNodes`") {
		t.Errorf("%s does not ask for the control plane's nodes, which drift reports once on-prem nodes are declared:\n%s", layout.Day0DocsPath, doc)
	}
	l, err = source.Load(testsrc.Copy(t, map[string]string{"nodes.cue": `nodeGroups: "onprem-gpu": nodes: "a100-01": {cpu: 128, memoryGiB: 1024}
cluster: controlPlaneNodes: "cp-1": {cpu: 16, memoryGiB: 64}
`}))
	if err != nil {
		t.Fatal(err)
	}
	declared, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(declared[layout.Day0DocsPath]), "- Nodes outside the MIGs:") {
		t.Errorf("%s asks for the control plane's nodes, which the source declares", layout.Day0DocsPath)
	}
	at := 0
	for _, s := range []string{
		"bash out/onprem/set-provider-id.sh\n",
		docs.Day0StepMarker + docs.Day0StepOnpremNodes + " -->",
		"bash out/onprem/label-onprem-nodes.sh --dry-run\nbash out/onprem/label-onprem-nodes.sh\n",
		"helm upgrade --install cluster-autoscaler",
	} {
		i := strings.Index(doc[at:], s)
		if i < 0 {
			t.Fatalf("%s: %q missing or out of order (after byte %d)\n%s", layout.Day0DocsPath, s, at, doc)
		}
		at += i + len(s)
	}
}

// TestDay0MetadataKey: with the token in project metadata nodegen renders
// no renewer, and the steps neither apply nor run one; the first token is
// made in the cloud join group only, set as the metadata key, and the
// autoscaler's node approved by hand, as with Secret Manager.
func TestDay0MetadataKey(t *testing.T) {
	src, _ := testsrc.Example(t)
	src.Cluster.JoinToken = model.JoinToken{MetadataKey: "kubeadm-join-token", TTL: model.DurationOf(24 * time.Hour), RenewEvery: model.DurationOf(6 * time.Hour)}
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(files[layout.Day0DocsPath])
	for _, absent := range []string{"join-token-renewer", "secretmanager"} {
		if strings.Contains(doc, absent) {
			t.Errorf("%s names %q without a renewer", layout.Day0DocsPath, absent)
		}
	}
	want := "sudo kubeadm token create --ttl 24h --groups " + model.CloudBootstrapGroup + " --description nodegen-first-join-token |\n" +
		"  gcloud compute project-info add-metadata --project=acme-hybrid-ai --metadata-from-file=kubeadm-join-token=/dev/stdin\n"
	if !strings.Contains(doc, docs.Day0FirstTokenBegin) || !strings.Contains(doc, want) || strings.Count(doc, "kubeadm token create") != strings.Count(doc, "kubeadm token create --ttl 24h --groups "+model.CloudBootstrapGroup+" ") {
		t.Errorf("%s does not make the first token in the cloud join group only and set it as the metadata key\n%s", layout.Day0DocsPath, doc)
	}
	for _, step := range []string{docs.Day0ListCSRsBegin, docs.Day0ApproveCSRBegin, "kubectl apply -f out/" + layout.NodeCSRApproverPath} {
		if strings.Count(doc, step) != 1 {
			t.Errorf("%s has %q %d times, want once", layout.Day0DocsPath, step, strings.Count(doc, step))
		}
	}
}

// TestDay0SourceDir: the steps run from the directory that holds the
// source directory and out/, and their nodegen check names the source
// directory, quoted for the shell, when it is not nodegen's default.
func TestDay0SourceDir(t *testing.T) {
	_, files := testsrc.Example(t)
	doc := string(files[layout.Day0DocsPath])
	if !strings.Contains(doc, "Run them from the directory that holds the source directory `nodegroups/` and `out/`.") ||
		!strings.Contains(doc, "```sh\nnodegen check\n") {
		t.Errorf("%s: not run from the directory of nodegroups/ and out/ with a plain nodegen check:\n%s", layout.Day0DocsPath, doc)
	}
	dir := filepath.Join(t.TempDir(), "it's clusters")
	if err := os.Rename(testsrc.Copy(t, nil), dir); err != nil {
		t.Fatal(err)
	}
	l, err := source.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err = render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	doc = string(files[layout.Day0DocsPath])
	for _, want := range []string{"the source directory `it's clusters/` and `out/`.", "```sh\nnodegen check --source 'it'\\''s clusters'\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("%s of source directory %q lacks %q:\n%s", layout.Day0DocsPath, filepath.Base(dir), want, doc)
		}
	}
}
