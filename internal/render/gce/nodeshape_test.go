package gce_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/explain"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodetemplate"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/verify"
)

// nodeShapeSource is the capacity tests' own source: a Spot group of two
// time-sliced T4s (3 replicas each) with two local SSDs, maxPods 48 and
// one eviction signal of its own; an on-demand group with the defaults;
// the autoscaler's group.
var nodeShapeSource = map[string]string{
	"cluster.cue": `cluster: {
	name:                 "cap"
	kubernetesVersion:    "1.36.2"
	controlPlaneEndpoint: "cp.cap.example.net:6443"
	caCertHashes: ["sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"]
	joinToken: secretManager: secret: "cap-join-token"
	gcp: {project: "cap-project-1", region: "us-east1"}
	autoscaler: {nodeGroup: "ca", singleZone: true}
}
`,
	"ca.cue": `nodeGroups: ca: {
	kind: "gce-static"
	zones: ["us-east1-b"]
	machineType: "e2-standard-2"
	image: "projects/cap-project-1/global/images/family/node"
	min: 1
	max: 1
	taints: [{key: "cap.example.net/dedicated", value: "ca", effect: "NoSchedule"}]
}
`,
	"t4.cue": `nodeGroups: t4: {
	kind: "gce"
	zones: ["us-east1-c", "us-east1-d"]
	machineType: "n1-standard-16"
	image: "projects/cap-project-1/global/images/family/node-gpu"
	spot: true
	localSsdCount: 2
	min: 0
	max: 3
	gpu: {type: "nvidia-tesla-t4", count: 2, sharing: timeSlicing: replicas: 3}
	kubelet: {maxPods: 48, evictionHard: "imagefs.available": "20%"}
}
`,
	"plain.cue": `nodeGroups: plain: {
	kind: "gce"
	zones: ["us-east1-b"]
	machineType: "n2-standard-4"
	image: "projects/cap-project-1/global/images/family/node"
	min: 0
	max: 5
}
`,
}

func loadCapacitySource(t *testing.T, replace ...string) (*model.Source, layout.Files) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range nodeShapeSource {
		body = strings.NewReplacer(replace...).Replace(body)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := pipeline.Load(dir)
	if err != nil {
		t.Fatalf("the test source is invalid: %v", err)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.All(l.Fleet.Clusters[0], files); err != nil {
		t.Fatalf("verify: %v", err)
	}
	return l.Fleet.Clusters[0], files
}

func TestCapacityKubeletConfiguration(t *testing.T) {
	_, files := loadCapacitySource(t)
	t4 := scripttest.KubeletConfig(t, files[layout.StartupScriptPath("t4")])
	want := map[string]string{
		"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
		"imagefs.available": "20%", "imagefs.inodesFree": "5%",
	}
	if !maps.Equal(t4.EvictionHard, want) {
		t.Errorf("t4 evictionHard %v, want %v (every kubelet default, the source's imagefs.available)", t4.EvictionHard, want)
	}
	if t4.MaxPods != 48 {
		t.Errorf("t4 maxPods %d, want 48", t4.MaxPods)
	}
	if t4.ShutdownGracePeriod.Duration.String() != "30s" || t4.ShutdownGracePeriodCriticalPods.Duration.String() != "10s" {
		t.Errorf("t4 (Spot) shutdown %s/%s, want 30s/10s", t4.ShutdownGracePeriod.Duration, t4.ShutdownGracePeriodCriticalPods.Duration)
	}
	plain := scripttest.KubeletConfig(t, files[layout.StartupScriptPath("plain")])
	if len(plain.EvictionHard) != 5 || plain.EvictionHard["imagefs.available"] != "15%" {
		t.Errorf("plain evictionHard %v, want the kubelet's five defaults", plain.EvictionHard)
	}
	if plain.MaxPods != 110 || plain.ShutdownGracePeriod.Duration != 0 {
		t.Errorf("plain maxPods %d shutdown %s, want 110 and none", plain.MaxPods, plain.ShutdownGracePeriod.Duration)
	}
}

func TestCapacityKubeEnv(t *testing.T) {
	_, files := loadCapacitySource(t)
	tm, err := kubeenv.ReadTemplate(files[layout.KubeEnvPath("t4")])
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.ExtendedResources; got["nvidia.com/gpu"] != "6" || got["pods"] != "48" {
		t.Errorf("t4 extended_resources %v, want nvidia.com/gpu=6 (2 GPUs × 3 replicas) and pods=48", got)
	}
	if tm.Labels[model.SpotLabel] != "true" || tm.Labels[model.DevicePluginConfigLabel] != "t4" {
		t.Errorf("t4 template labels %v lack the Spot label or the device-plugin config label", tm.Labels)
	}
	if tm.LocalSSDCount != 2 || !tm.BlockBootDiskEphemeral {
		t.Errorf("t4 local SSDs %d, boot disk blocked %t; want 2, true", tm.LocalSSDCount, tm.BlockBootDiskEphemeral)
	}
	if want := map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"}; !maps.Equal(tm.EvictionHard, want) {
		t.Errorf("t4 kube-env evictionHard %v, want %v", tm.EvictionHard, want)
	}
	pm, err := kubeenv.ReadTemplate(files[layout.KubeEnvPath("plain")])
	if err != nil {
		t.Fatal(err)
	}
	if _, spot := pm.Labels[model.SpotLabel]; spot || pm.LocalSSDCount != 0 || pm.BlockBootDiskEphemeral || pm.ExtendedResources["pods"] != "110" {
		t.Errorf("plain template: labels %v, local SSDs %d, blocked %t, extended %v", pm.Labels, pm.LocalSSDCount, pm.BlockBootDiskEphemeral, pm.ExtendedResources)
	}
}

// TestCapacityTemplateNode builds the autoscaler's template node for the
// Spot group the way explain does and checks the capacity the policy sets.
func TestCapacityTemplateNode(t *testing.T) {
	src, files := loadCapacitySource(t)
	n, err := nodetemplate.TemplateNode(&src.Cluster, src.NodeGroups["t4"], "us-east1-c", files[layout.KubeEnvPath("t4")], nil)
	if err != nil {
		t.Fatal(err)
	}
	c := n.Status.Capacity
	// 2 × 375 GiB less the autoscaler's measured overhead for 2 SSDs on Ubuntu (13651496 KiB).
	wantStorage := int64(2*375)<<30 - 13651496<<10
	if got := c["ephemeral-storage"]; got.Value() != wantStorage {
		t.Errorf("ephemeral-storage %d, want %d", got.Value(), wantStorage)
	}
	if got := c["nvidia.com/gpu"]; got.Cmp(resource.MustParse("6")) != 0 {
		t.Errorf("nvidia.com/gpu %s, want 6", got.String())
	}
	if got := c["pods"]; got.Value() != 48 {
		t.Errorf("pods %s, want 48", got.String())
	}
}

func TestCapacityTerraform(t *testing.T) {
	_, files := loadCapacitySource(t)
	p := hclparse.NewParser()
	f, diags := p.ParseHCL(files[layout.TerraformGroupPath("t4")], "t4.tf")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var tmpl *hclsyntax.Body
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type == "resource" && b.Labels[0] == gce.TFInstanceTemplate {
			tmpl = b.Body
		}
	}
	if tmpl == nil {
		t.Fatal("no instance template")
	}
	attr := func(b *hclsyntax.Body, name string) string {
		a, ok := b.Attributes[name]
		if !ok {
			return ""
		}
		v, d := a.Expr.Value(&hcl.EvalContext{})
		if d.HasErrors() {
			t.Fatal(d)
		}
		if v.Type().FriendlyName() == "bool" {
			if v.True() {
				return "true"
			}
			return "false"
		}
		if v.Type().FriendlyName() == "number" {
			return v.AsBigFloat().String()
		}
		return v.AsString()
	}
	ssds, sched := 0, 0
	for _, b := range tmpl.Blocks {
		switch b.Type {
		case "disk":
			if attr(b.Body, "type") == "SCRATCH" {
				ssds++
				if attr(b.Body, "disk_type") != "local-ssd" || attr(b.Body, "interface") != "NVME" || attr(b.Body, "disk_size_gb") != "375" {
					t.Errorf("local SSD disk %s/%s/%s", attr(b.Body, "disk_type"), attr(b.Body, "interface"), attr(b.Body, "disk_size_gb"))
				}
			}
		case "scheduling":
			sched++
			if attr(b.Body, "provisioning_model") != "SPOT" || attr(b.Body, "instance_termination_action") != "DELETE" ||
				attr(b.Body, "preemptible") != "true" || attr(b.Body, "automatic_restart") != "false" {
				t.Errorf("scheduling: model %s action %s", attr(b.Body, "provisioning_model"), attr(b.Body, "instance_termination_action"))
			}
		}
	}
	if ssds != 2 || sched != 1 {
		t.Errorf("%d local SSDs and %d scheduling blocks, want 2 and 1", ssds, sched)
	}
	if strings.Contains(string(files[layout.TerraformGroupPath("plain")]), "SCRATCH") {
		t.Error("plain group has a local SSD")
	}
}

func TestCapacityDevicePluginConfig(t *testing.T) {
	_, files := loadCapacitySource(t)
	var v struct {
		DevicePlugin struct {
			Config struct {
				Create  bool              `json:"create"`
				Name    string            `json:"name"`
				Default string            `json:"default"`
				Data    map[string]string `json:"data"`
			} `json:"config"`
		} `json:"devicePlugin"`
	}
	if err := yaml.Unmarshal(files[layout.GPUOperatorValuesPath], &v); err != nil {
		t.Fatal(err)
	}
	c := v.DevicePlugin.Config
	if !c.Create || c.Name == "" || c.Default == "" || len(c.Data) != 2 {
		t.Fatalf("devicePlugin.config %+v: want create, a name, a default and two entries", c)
	}
	if _, ok := c.Data[c.Default]; !ok {
		t.Errorf("the default config %q is not in data", c.Default)
	}
	var dp struct {
		Version string `json:"version"`
		Sharing struct {
			TimeSlicing struct {
				RenameByDefault bool `json:"renameByDefault"`
				Resources       []struct {
					Name     string `json:"name"`
					Replicas int    `json:"replicas"`
				} `json:"resources"`
			} `json:"timeSlicing"`
		} `json:"sharing"`
	}
	if err := yaml.UnmarshalStrict([]byte(c.Data["t4"]), &dp); err != nil {
		t.Fatal(err)
	}
	ts := dp.Sharing.TimeSlicing
	if dp.Version != "v1" || ts.RenameByDefault || len(ts.Resources) != 1 || ts.Resources[0].Name != "nvidia.com/gpu" || ts.Resources[0].Replicas != 3 {
		t.Errorf("t4 device plugin config %+v", dp)
	}
}

// TestCapacityMismatchesAreCaught breaks one side of each capacity promise
// in the rendered files and expects gen's verification to name it.
func TestCapacityMismatchesAreCaught(t *testing.T) {
	src, files := loadCapacitySource(t)
	cases := []struct {
		name, path, old, new, want string
	}{
		{"kube-env GPUs without sharing", layout.KubeEnvPath("t4"), "nvidia.com/gpu=6", "nvidia.com/gpu=2", "nvidia.com/gpu: template 2"},
		{"device plugin replicas", layout.GPUOperatorValuesPath, "replicas: 3", "replicas: 2", "device plugin 4"},
		{"kube-env pods", layout.KubeEnvPath("t4"), "pods=48", "pods=110", "pods: template 110"},
		{"kubelet maxPods", layout.StartupScriptPath("t4"), "maxPods: 48", "maxPods: 64", "kubelet maxPods 64"},
		{"a default eviction signal lost", layout.StartupScriptPath("plain"), "  nodefs.inodesFree: 5%\n", "", "lacks nodefs.inodesFree"},
		{"kube-env eviction differs", layout.KubeEnvPath("plain"), "nodefs.available=10%", "nodefs.available=5%", "evictionHard nodefs.available"},
		{"Terraform not Spot", layout.TerraformGroupPath("t4"), `"SPOT"`, `"STANDARD"`, "spot: terraform provisioning_model"},
		{"a local SSD missing", layout.TerraformGroupPath("t4"), `  disk {
    type         = "SCRATCH"`, `  disk {
    type         = "PERSISTENT"`, "local SSDs"},
		{"shutdown past the notice", layout.StartupScriptPath("t4"), "shutdownGracePeriod: 30s", "shutdownGracePeriod: 1m0s", "preemption notice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(string(files[c.path]), c.old) {
				t.Fatalf("%s does not contain %q", c.path, c.old)
			}
			broken := maps.Clone(files)
			broken[c.path] = []byte(strings.Replace(string(files[c.path]), c.old, c.new, 1))
			err := verify.All(src, broken)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("verify: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestCapacityStartupScriptLocalSSDs runs the local-SSD group's startup
// script under bash: it joins only when the kubelet's and containerd's
// directories are on a filesystem other than the boot disk's (a tmpfs
// directory and /sys stand in for the SSD mounts: any other filesystem
// will do).
func TestCapacityStartupScriptLocalSSDs(t *testing.T) {
	src, files := loadCapacitySource(t)
	g := src.NodeGroups["t4"]
	script := files[layout.StartupScriptPath(g.Name)]
	vm := scripttest.VM{
		Project:       src.Cluster.GCP.Project,
		NumericID:     "123456789012",
		Zone:          g.Zones[0],
		Instance:      src.Cluster.BaseInstanceName(g) + "-q2w3",
		JoinToken:     joinToken,
		Secret:        "cap-join-token",
		SecretVersion: "latest",
	}
	boot := t.TempDir()
	onBoot := filepath.Join(boot, "var-lib-kubelet")
	if err := os.Mkdir(onBoot, 0o755); err != nil {
		t.Fatal(err)
	}
	ssd := scripttest.OtherFilesystemDir(t)
	cases := []struct {
		name, kubelet, containerd, want string
	}{
		{"both off the boot disk", ssd, "/sys", ""},
		{"kubelet on the boot disk", onBoot, "/sys", onBoot + " is on the boot disk's filesystem"},
		{"containerd missing", ssd, filepath.Join(boot, "absent"), filepath.Join(boot, "absent") + " does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := scripttest.Run(t, script, vm, scripttest.Options{KubeletDir: c.kubelet, Constants: map[string]string{
				"BOOT_DIR": boot, "CONTAINERD_DIR": c.containerd,
			}})
			if c.want == "" {
				if res.ExitCode != 0 || len(res.KubeadmCalls) != 1 {
					t.Fatalf("exit %d, kubeadm calls %v\n%s", res.ExitCode, res.KubeadmCalls, res.Stderr)
				}
				return
			}
			if res.ExitCode != 1 || len(res.KubeadmCalls) != 0 || len(res.Requests) != 0 ||
				!strings.Contains(res.Stderr, c.want) || !strings.Contains(res.Stderr, "ERROR: storage: ") || strings.Count(res.Stderr, "ERROR") != 1 {
				t.Errorf("exit %d, kubeadm calls %v, requests %v; want one storage error mentioning %q\n%s", res.ExitCode, res.KubeadmCalls, res.Requests, c.want, res.Stderr)
			}
		})
	}
	// A group without local SSDs does not look at the directories.
	plain := files[layout.StartupScriptPath("plain")]
	if strings.Contains(string(plain), "check_local_ssd_storage") {
		t.Error("the plain group's script checks local SSD storage")
	}
}

// TestCapacityStartupScriptShellcheck runs bash -n and shellcheck on the
// local-SSD group's script, which the shipped example does not render,
// with the join token read from Secret Manager and from a metadata key
// (each variant leaves out what the other one needs).
func TestCapacityStartupScriptShellcheck(t *testing.T) {
	for name, replace := range map[string][]string{
		"secretManager": nil,
		"metadataKey":   {`joinToken: secretManager: secret: "cap-join-token"`, `joinToken: metadataKey: "cap-join-token"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, files := loadCapacitySource(t, replace...)
			script := files[layout.StartupScriptPath("t4")]
			if name == "metadataKey" && !strings.Contains(string(script), "project/attributes/") {
				t.Fatal("the replacement did not switch the token source")
			}
			path := filepath.Join(t.TempDir(), "t4.sh")
			if err := os.WriteFile(path, script, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
				t.Fatalf("bash -n: %v\n%s", err, out)
			}
			if _, err := exec.LookPath("shellcheck"); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatal("shellcheck is not installed; .ci/run installs it")
				}
				t.Skip("shellcheck not installed")
			}
			if out, err := exec.Command("shellcheck", "--shell=bash", "--severity=style", path).CombinedOutput(); err != nil {
				t.Errorf("shellcheck: %v\n%s", err, out)
			}
		})
	}
}

// TestCapacityExplainMaxPods: explain counts pods against the template's
// pods allocatable (maxPods), as the scheduler's NodeResourcesFit does:
// kube-proxy, the taint remover and nine DaemonSets fill a new node of the
// GPU group at maxPods 11 (the least vet allows on a GPU group), and leave
// room for one pod at 12.
func TestCapacityExplainMaxPods(t *testing.T) {
	var yaml strings.Builder
	for i := range 9 {
		fmt.Fprintf(&yaml, `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent-%d, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent-%d}}
  template:
    metadata: {labels: {app: agent-%d}}
    spec:
      tolerations: [{operator: Exists}]
      containers: [{name: agent, image: agent}]
---
`, i, i, i)
	}
	yaml.WriteString(`apiVersion: v1
kind: Pod
metadata: {name: gpu}
spec:
  tolerations: [{operator: Exists}]
  containers: [{name: c, image: c, resources: {limits: {nvidia.com/gpu: 1}}}]
`)
	ws, _, err := explain.Decode("w.yaml", []byte(yaml.String()))
	if err != nil || len(ws) != 10 {
		t.Fatalf("decode: %d workloads, %v", len(ws), err)
	}
	for _, c := range []struct {
		maxPods string
		fits    bool
	}{{"48", true}, {"12", true}, {"11", false}} {
		src, files := loadCapacitySource(t, "maxPods: 48", "maxPods: "+c.maxPods)
		e, err := explain.New(src, files, ws)
		if err != nil {
			t.Fatal(err)
		}
		var t4 *explain.GroupResult
		r := e.Workload(ws[9])
		for i := range r.Groups {
			if r.Groups[i].Group == "t4" {
				t4 = &r.Groups[i]
			}
		}
		if t4 == nil {
			t.Fatal("no verdict for t4")
		}
		if c.fits {
			if t4.Verdict != explain.Fits {
				t.Errorf("maxPods %s: %s %+v, want fits", c.maxPods, t4.Verdict, t4.Reasons)
			}
			continue
		}
		if t4.Verdict != explain.NoFit || len(t4.Reasons) != 1 || t4.Reasons[0].Resource != "pods" ||
			!strings.Contains(t4.Reasons[0].Message, "a new node allows 11 pods (maxPods) and already runs 11") {
			t.Errorf("maxPods %s: %s %+v, want one too-many-pods reason", c.maxPods, t4.Verdict, t4.Reasons)
		}
	}
}
