package render_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/nodegen/nodegen/internal/agree"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/render/terraform"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/validate"
)

// The fuzz targets below check nodegen's promises on inputs nobody wrote
// by hand. Run one for a while with, e.g.:
//
//	go test ./internal/render -run '^$' -fuzz '^FuzzKubeEnvRoundTrip$' -fuzztime 10s
//
// Without -fuzz they run their seeds (f.Add and testdata/fuzz) as tests.

// noPos is a validate.Positioner for sources built in Go.
type noPos struct{}

func (noPos) Pos(...cue.Selector) token.Pos    { return token.NoPos }
func (noPos) KeyPos(...cue.Selector) token.Pos { return token.NoPos }

// fuzzGroup is the group the fuzz targets vary: the example's GPU group.
const fuzzGroup = "gpu-t4"

var effects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

// fuzzedSource returns a copy of the example whose GPU group has the
// labels and taints encoded in the fuzz input, and reports whether nodegen
// accepts it (validate finds nothing). labels holds one key=value per
// line; taints one key=value:Effect per line; startupKey, when not empty,
// replaces the startup taint's key.
func fuzzedSource(t *testing.T, example []byte, labels, taints, startupKey string, arm bool, gpus uint8) (*model.Source, *model.NodeGroup, bool) {
	src := &model.Source{}
	if err := json.Unmarshal(example, src); err != nil {
		t.Fatal(err)
	}
	src.Name = "nodegroups"
	g := src.NodeGroups[fuzzGroup]
	g.Labels = map[string]string{}
	for _, line := range strings.Split(labels, "\n") {
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		g.Labels[k] = v
	}
	g.Taints = nil
	for _, line := range strings.Split(taints, "\n") {
		if line == "" {
			continue
		}
		k, rest, _ := strings.Cut(line, "=")
		v, e, _ := strings.Cut(rest, ":")
		g.Taints = append(g.Taints, model.Taint{Key: k, Value: v, Effect: e})
	}
	g.StartupTaint = nil
	if startupKey != "" {
		g.StartupTaint = &model.Taint{Key: startupKey, Value: "true", Effect: "NoSchedule"}
	}
	g.GPU.Count = []int{1, 2, 4}[int(gpus)%3]
	if arm {
		// The Arm GPU shape: A4X (NVIDIA Grace CPUs) with its 4 GB200s.
		g.Arch, g.MachineType = "arm64", "a4x-highgpu-4g"
		g.GPU = &model.GPU{Type: "nvidia-gb200", Count: 4}
	}
	src.Resolve()
	return src, g, len(validate.Source(src, noPos{})) == 0
}

// exampleJSON is the example source, resolved, as JSON: each fuzz input
// starts from a fresh copy of it.
func exampleJSON(f *testing.F) []byte {
	src, _ := testsrc.Example(f)
	b, err := json.Marshal(src)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// groupSeeds are valid groups: the fuzzer starts from them.
var groupSeeds = []struct {
	labels, taints, startupKey string
	arm                        bool
	gpus                       uint8
}{
	{"example.com/pool=gpu-burst\nexample.com/location=cloud", "nvidia.com/gpu=present:NoSchedule", "", false, 0},
	{"a=\nb.example.com/Z_z=Value.1", "t=:NoExecute\nexample.com/x=y:PreferNoSchedule", "example.com/gpu-warming", true, 2},
	{"", "", "startup-taint.cluster-autoscaler.kubernetes.io/drivers", false, 1},
	{"node.kubernetes.io/pool=a-b_c.d\nkubelet.kubernetes.io/y=z", "example.com/dedicated=gpu:NoSchedule\nexample.com/spot=:PreferNoSchedule", "ignore-taint.cluster-autoscaler.kubernetes.io/old", false, 0},
}

func addGroupSeeds(f *testing.F) {
	for _, s := range groupSeeds {
		f.Add(s.labels, s.taints, s.startupKey, s.arm, s.gpus)
	}
}

// TestGroupSeedsValid makes sure the fuzz targets' seeds are groups nodegen
// accepts, so that they exercise the round trips and not the rejection.
func TestGroupSeedsValid(t *testing.T) {
	src, _ := testsrc.Example(t)
	example, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range groupSeeds {
		if _, _, ok := fuzzedSource(t, example, s.labels, s.taints, s.startupKey, s.arm, s.gpus); !ok {
			esrc, _, _ := fuzzedSource(t, example, s.labels, s.taints, s.startupKey, s.arm, s.gpus)
			t.Errorf("seed %+v is not valid: %v", s, validate.Source(esrc, noPos{}))
		}
	}
}

// FuzzKubeEnvRoundTrip: for any group nodegen accepts, the labels and
// taints the autoscaler reads back from its kube-env (parsed the way the
// autoscaler parses it) are the group's.
func FuzzKubeEnvRoundTrip(f *testing.F) {
	example := exampleJSON(f)
	addGroupSeeds(f)
	f.Fuzz(func(t *testing.T, labels, taints, startupKey string, arm bool, gpus uint8) {
		src, g, ok := fuzzedSource(t, example, labels, taints, startupKey, arm, gpus)
		if !ok {
			return // nodegen rejects it with a finding
		}
		vars, err := render.KubeEnvVars(g)
		if err != nil {
			t.Fatalf("valid group, KubeEnvVars: %v", err)
		}
		env, err := render.KubeEnv(src, g, "# header\n")
		if err != nil {
			t.Fatalf("valid group, KubeEnv: %v", err)
		}
		tmpl, err := kubeenv.ReadTemplate(env)
		if err != nil {
			t.Fatalf("the autoscaler cannot read the kube-env: %v\n%s", err, env)
		}
		if err := tmpl.MatchesSource(g, src.ExtraStartupTaints()...); err != nil {
			t.Errorf("%v\n%s", err, env)
		}
		if tmpl.Arch != g.Arch {
			t.Errorf("arch read back %q, want %q", tmpl.Arch, g.Arch)
		}
		parsed, err := kubeenv.Parse(env)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vars {
			got, found, err := kubeenv.LookupVar(parsed, v.Name)
			if err != nil || !found || got != v.Value {
				t.Errorf("variable %s read back %q (found %v, %v), want %q", v.Name, got, found, err, v.Value)
			}
		}
	})
}

// bashPrintf runs printf '%s' with args under bash and returns its output.
func bashPrintf(t *testing.T, script string) []byte {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s\nscript:\n%s", err, stderr.Bytes(), script)
	}
	return out
}

// FuzzShellQuote: bash reads back from a quoted word exactly the bytes
// that were quoted, whatever they are (NUL aside: no bash word holds it).
func FuzzShellQuote(f *testing.F) {
	if _, err := exec.LookPath("bash"); err != nil {
		f.Skip("no bash")
	}
	for _, s := range []string{"", "plain", "it's", "'", "''", `'\''`, "$(reboot)", "`id`", "${HOME}", "a b\tc\nd", `"; rm -rf / #`, "\\", "!!", "*", "~", "é漢字", "\x01\x7f\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			return
		}
		q := render.ShellQuote(s)
		if got := bashPrintf(t, "printf %s "+q); string(got) != s {
			t.Errorf("bash read %q back from %s, want %q", got, q, s)
		}
		// Quoted words stay one word next to others.
		if got := bashPrintf(t, "printf '<%s>' "+q+" "+q); string(got) != "<"+s+"><"+s+">" {
			t.Errorf("bash read %q back from two words %s, want two copies of %q", got, q, s)
		}
	})
}

// FuzzStartupScriptValues: for any group nodegen accepts, the
// JoinConfiguration its startup script writes (as bash fills it in for a
// VM) decodes strictly and registers the group's node labels plus the
// zone, region and instance-type labels, and its join taints, startup
// taint last.
func FuzzStartupScriptValues(f *testing.F) {
	if _, err := exec.LookPath("bash"); err != nil {
		f.Skip("no bash")
	}
	example := exampleJSON(f)
	addGroupSeeds(f)
	f.Fuzz(func(t *testing.T, labels, taints, startupKey string, arm bool, gpus uint8) {
		src, g, ok := fuzzedSource(t, example, labels, taints, startupKey, arm, gpus)
		if !ok {
			return
		}
		script, err := render.StartupScript(src, g, "# header\n")
		if err != nil {
			t.Fatalf("valid group, StartupScript: %v", err)
		}
		// Run everything but the final call of main, then fill in the
		// configuration.
		body, ok := bytes.CutSuffix(script, []byte("main \"$@\"\n"))
		if !ok {
			t.Fatalf("the script does not end with main \"$@\"")
		}
		const instance, zone, token = "vm-x7k2", "us-central1-b", "abcdef.0123456789abcdef"
		out := bashPrintf(t, string(body)+"join_configuration "+instance+" "+zone+" "+token)
		cfg, err := kubeadm.DecodeJoinConfiguration(out)
		if err != nil {
			t.Fatalf("the script writes a JoinConfiguration that does not decode: %v\n%s", err, out)
		}
		j, err := agree.FromJoinConfiguration(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := maps.Clone(g.NodeLabels)
		want[model.ZoneLabel], want[model.RegionLabel], want[model.InstanceTypeLabel] = zone, "us-central1", g.MachineType
		if !maps.Equal(j.Labels, want) {
			t.Errorf("the node registers labels %v, want %v", j.Labels, want)
		}
		if !slices.Equal(j.Taints, g.JoinTaints()) {
			t.Errorf("the node registers taints %v, want %v", j.Taints, g.JoinTaints())
		}
		if j.Name != instance || j.ProviderID != "gce://"+src.Cluster.GCP.Project+"/"+zone+"/"+instance || cfg.Discovery.BootstrapToken.Token != token {
			t.Errorf("name %q, provider-id %q, token %q", j.Name, j.ProviderID, cfg.Discovery.BootstrapToken.Token)
		}
	})
}

// FuzzTerraformCanonical: for any group nodegen accepts, whatever its
// labels, taints and description, every Terraform file is canonical:
// hclwrite.Format (terraform fmt's formatter) leaves it byte for byte as
// nodegen wrote it, and it parses.
func FuzzTerraformCanonical(f *testing.F) {
	example := exampleJSON(f)
	for i, s := range groupSeeds {
		f.Add(s.labels, s.taints, s.startupKey, []string{"", "GPU burst pool", "a \"quoted\" ${x} %{y} line\nand é漢字 # not a comment"}[i%3], s.arm, s.gpus)
	}
	f.Fuzz(func(t *testing.T, labels, taints, startupKey, description string, arm bool, gpus uint8) {
		src, g, ok := fuzzedSource(t, example, labels, taints, startupKey, arm, gpus)
		if !ok {
			return
		}
		g.Description = description
		if len(validate.Source(src, noPos{})) > 0 {
			return
		}
		files := layout.Files{}
		if err := terraform.Terraform(src, files); err != nil {
			t.Fatalf("valid source, Terraform: %v", err)
		}
		for _, p := range files.Paths() {
			b := files[p]
			if got := hclwrite.Format(b); !bytes.Equal(got, b) {
				t.Errorf("%s is not canonical; hclwrite.Format gives:\n%s\nnodegen wrote:\n%s", p, got, b)
			}
			if _, diags := hclsyntax.ParseConfig(b, p, hcl.InitialPos); diags.HasErrors() {
				t.Errorf("%s: %v", p, diags)
			}
		}
	})
}
