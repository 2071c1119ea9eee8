package gce_test

import (
	"os"

	"path/filepath"
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

const joinToken = "abcdef.0123456789abcdef"

func gpuVM(src *model.Source, g *model.NodeGroup) scripttest.VM {
	vm := scripttest.VM{
		Project:   src.Cluster.GCP.Project,
		NumericID: "123456789012",
		Zone:      g.Zones[0],
		Instance:  src.Cluster.BaseInstanceName(g) + "-b9q1",
		JoinToken: joinToken,
	}
	if sm := src.Cluster.JoinToken.SecretManager; sm != nil {
		vm.Secret, vm.SecretVersion = sm.Secret, sm.Version
	}
	return vm
}

func TestStartupScriptJoinsOnceAndKeepsNoSecret(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	script := files[layout.StartupScriptPath(g.Name)]
	vm := gpuVM(src, g)
	res := scripttest.Run(t, script, vm, scripttest.Options{})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", res.ExitCode, res.Stderr)
	}
	if got := strings.Join(res.KubeadmCalls, "|"); !strings.HasPrefix(got, "join --config ") || strings.Contains(got, "|") {
		t.Errorf("kubeadm calls = %q, want one join --config", got)
	}
	if strings.Contains(res.Stderr, joinToken) || strings.Contains(res.Stderr, "fake-access-token") {
		t.Errorf("the log shows a secret:\n%s", res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(res.StateDir, "join-configuration.yaml")); !os.IsNotExist(err) {
		t.Errorf("the join configuration (with the token) is left on disk: %v", err)
	}
	wantReq := "/v1/projects/acme-hybrid-ai/secrets/kubeadm-join-token/versions/latest:access"
	if !contains(res.Requests, wantReq) {
		t.Errorf("Secret Manager was not asked for %s; requests: %v", wantReq, res.Requests)
	}
	cfg, err := kubeadm.DecodeJoinConfiguration(res.JoinConfigs[0])
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Patches == nil || cfg.Patches.Directory != model.NodePatchesDir {
		t.Errorf("patches = %+v, want %s", cfg.Patches, model.NodePatchesDir)
	}
	if res.JoinConfigMode != "600" {
		t.Errorf("kubeadm was given a join configuration (with the token) of mode %s, want 600", res.JoinConfigMode)
	}
	if len(res.NftRulesets) != 1 || !strings.Contains(res.NftRulesets[0], "ip daddr 169.254.169.254 counter drop") {
		t.Errorf("nft rulesets %q, want one dropping forwarded traffic to the metadata server", res.NftRulesets)
	}

	// The kubelet patch is a strict KubeletConfiguration with the group's reservations.
	var kc kubeletv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict(res.KubeletPatch, &kc); err != nil {
		t.Fatalf("kubelet patch: %v\n%s", err, res.KubeletPatch)
	}
	if kc.Kind != "KubeletConfiguration" || kc.KubeReserved["memory"] != "1Gi" || kc.SystemReserved["memory"] != "512Mi" ||
		kc.EvictionHard["memory.available"] != "100Mi" || kc.EvictionHard["nodefs.available"] != "10%" {
		t.Errorf("kubelet patch = %+v", kc)
	}

	// GCE runs the script at every boot: the second boot does not join
	// again, but blocks the metadata server again (nftables rules do not
	// survive a reboot) and removes a join configuration a crash left.
	leftover := filepath.Join(res.StateDir, "join-configuration.yaml")
	if err := os.WriteFile(leftover, []byte("token: "+joinToken), 0o600); err != nil {
		t.Fatal(err)
	}
	again := scripttest.Run(t, script, vm, scripttest.Options{StateDir: res.StateDir, KubernetesDir: res.KubernetesDir, KubeletDir: res.KubeletDir})
	if again.ExitCode != 0 || len(again.KubeadmCalls) != 0 || !strings.Contains(again.Stderr, "already joined") {
		t.Errorf("second boot: exit %d, kubeadm calls %v\n%s", again.ExitCode, again.KubeadmCalls, again.Stderr)
	}
	if len(again.NftRulesets) != 1 {
		t.Errorf("second boot: %d nft calls, want 1", len(again.NftRulesets))
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("second boot left the join configuration of a crashed boot on disk: %v", err)
	}
}

func TestStartupScriptRetries(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	script := files[layout.StartupScriptPath(g.Name)]
	vm := gpuVM(src, g)

	t.Run("flapping VPN: two failed joins, then success", func(t *testing.T) {
		res := scripttest.Run(t, script, vm, scripttest.Options{FailJoins: 2})
		if res.ExitCode != 0 {
			t.Fatalf("exit %d\n%s", res.ExitCode, res.Stderr)
		}
		want := []string{"join", "reset --force", "join", "reset --force", "join"}
		if len(res.KubeadmCalls) != len(want) {
			t.Fatalf("kubeadm calls %q, want %q", res.KubeadmCalls, want)
		}
		for i, w := range want {
			if !strings.HasPrefix(res.KubeadmCalls[i], w) {
				t.Errorf("call %d = %q, want %s...", i, res.KubeadmCalls[i], w)
			}
		}
		if !strings.Contains(res.Stderr, "attempt 3,") || !strings.Contains(res.Stderr, "retrying") {
			t.Errorf("the log does not tell the retries:\n%s", res.Stderr)
		}
	})
	t.Run("metadata server outage is retried", func(t *testing.T) {
		res := scripttest.Run(t, script, vm, scripttest.Options{MetadataOutage: 3})
		if res.ExitCode != 0 || len(res.JoinConfigs) != 1 {
			t.Errorf("exit %d, joins %d\n%s", res.ExitCode, len(res.JoinConfigs), res.Stderr)
		}
	})
}

func TestStartupScriptRefusesBadInput(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	script := files[layout.StartupScriptPath(g.Name)]
	cases := []struct {
		name      string
		edit      func(*scripttest.VM)
		want      string
		constants map[string]string
	}{
		{"not a bootstrap token", func(vm *scripttest.VM) { vm.JoinToken = "hunter2" }, "ERROR: token: the join token read at boot is not a kubeadm bootstrap token", nil},
		{"zone outside the region", func(vm *scripttest.VM) { vm.Zone = "europe-west4-a" }, "ERROR: metadata: zone europe-west4-a is not in region us-central1", nil},
		{"another project", func(vm *scripttest.VM) { vm.Project = "someone-else" }, "ERROR: metadata: project someone-else is not acme-hybrid-ai", nil},
		// Secret Manager's 404 is also what a secret without a version
		// answers: retried until the deadline, then refused.
		{"secret not found", func(vm *scripttest.VM) { vm.Secret = "other" }, "ERROR: secret access: could not read Secret Manager secret kubeadm-join-token (version latest); has the first join token been added?",
			map[string]string{"JOIN_DEADLINE": "10", "HTTP_RETRY_DELAY": "1"}},
		{"odd instance name", func(vm *scripttest.VM) { vm.Instance = "Bad_Name" }, "ERROR: metadata: unexpected instance name", nil},
		{"placeholder as instance name", func(vm *scripttest.VM) { vm.Instance = model.ZonePlaceholder }, "ERROR: metadata: unexpected instance name", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vm := gpuVM(src, g)
			c.edit(&vm)
			res := scripttest.Run(t, script, vm, scripttest.Options{Constants: c.constants})
			if res.ExitCode != 1 || len(res.KubeadmCalls) != 0 || !strings.Contains(res.Stderr, c.want) || strings.Count(res.Stderr, "ERROR") != 1 {
				t.Errorf("exit %d, kubeadm calls %v, want an error containing %q\n%s", res.ExitCode, res.KubeadmCalls, c.want, res.Stderr)
			}
			if strings.Contains(res.Stderr, "hunter2") {
				t.Errorf("the log shows the token")
			}
		})
	}
}

func TestStartupScriptFromProjectMetadata(t *testing.T) {
	src, _ := testsrc.Example(t)
	src.Cluster.JoinToken = model.JoinToken{MetadataKey: "kubeadm-join-token"}
	g := src.NodeGroups["cpu-burst"]
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	script := files[layout.StartupScriptPath(g.Name)]
	vm := gpuVM(src, g)
	vm.Secret, vm.MetadataKey = "", "kubeadm-join-token"
	res := scripttest.Run(t, script, vm, scripttest.Options{})
	if res.ExitCode != 0 || len(res.JoinConfigs) != 1 {
		t.Fatalf("exit %d\n%s", res.ExitCode, res.Stderr)
	}
	if !contains(res.Requests, "/computeMetadata/v1/project/attributes/kubeadm-join-token") {
		t.Errorf("requests %v", res.Requests)
	}
	cfg, err := kubeadm.DecodeJoinConfiguration(res.JoinConfigs[0])
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Discovery.BootstrapToken.Token != joinToken {
		t.Errorf("token %q", cfg.Discovery.BootstrapToken.Token)
	}
	if len(cfg.NodeRegistration.Taints) != 0 {
		t.Errorf("cpu-burst joins with taints %v", cfg.NodeRegistration.Taints)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
