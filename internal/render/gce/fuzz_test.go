package gce_test

import (
	"bytes"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/agree"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render/gce"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// The fuzz targets below check nodegen's promises on inputs nobody wrote
// by hand. Run one for a while with, e.g.:
//
//	go test ./internal/render/gce -run '^$' -fuzz '^FuzzKubeEnvRoundTrip$' -fuzztime 10s
//
// Without -fuzz they run their seeds (f.Add and testdata/fuzz) as tests.

// FuzzKubeEnvRoundTrip: for any group nodegen accepts, the labels and
// taints the autoscaler reads back from its kube-env (parsed the way the
// autoscaler parses it) are the group's.
func FuzzKubeEnvRoundTrip(f *testing.F) {
	example := testsrc.ExampleJSON(f)
	testsrc.AddGroupSeeds(f)
	f.Fuzz(func(t *testing.T, labels, taints, startupKey string, arm bool, gpus uint8) {
		src, g, ok := testsrc.FuzzedSource(t, example, labels, taints, startupKey, arm, gpus)
		if !ok {
			return // nodegen rejects it with a finding
		}
		vars, err := gce.KubeEnvVars(g)
		if err != nil {
			t.Fatalf("valid group, KubeEnvVars: %v", err)
		}
		env, err := kubeenv.Marshal("# header\n", vars)
		if err != nil {
			t.Fatalf("valid group, kube-env: %v", err)
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
		q := gce.ShellQuote(s)
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
	example := testsrc.ExampleJSON(f)
	testsrc.AddGroupSeeds(f)
	f.Fuzz(func(t *testing.T, labels, taints, startupKey string, arm bool, gpus uint8) {
		src, g, ok := testsrc.FuzzedSource(t, example, labels, taints, startupKey, arm, gpus)
		if !ok {
			return
		}
		script, err := gce.StartupScript(src, g, "# header\n")
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
