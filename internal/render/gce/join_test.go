package gce_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/verify"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// joinSource is a source of the tests' own, unlike the shipped example: a
// GPU group on L4s with a maxNodeProvisionTime of its own, a tainted CPU
// group, and the autoscaler's group in another zone pair.
var joinSource = map[string]string{
	"cluster.cue": `cluster: {
	name:                 "lab"
	kubernetesVersion:    "1.35.2"
	controlPlaneEndpoint: "cp.lab.example.net:6443"
	caCertHashes: ["sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"]
	joinToken: metadataKey: "lab-join-token"
	gcp: {project: "lab-project-7", region: "europe-west4"}
	autoscaler: {nodeGroup: "ca", maxNodeProvisionTime: "12m", singleZone: true}
}
`,
	"ca.cue": `nodeGroups: ca: {
	kind: "gce-static"
	zones: ["europe-west4-b"]
	machineType: "e2-standard-2"
	image: "projects/lab-project-7/global/images/family/node"
	min: 1
	max: 1
	taints: [{key: "lab.example.net/dedicated", value: "ca", effect: "NoSchedule"}]
}
`,
	"l4.cue": `nodeGroups: l4: {
	kind: "gce"
	zones: ["europe-west4-a", "europe-west4-c"]
	machineType: "g2-standard-8"
	image: "projects/lab-project-7/global/images/family/node-gpu"
	min: 0
	max: 3
	gpu: {type: "nvidia-l4", count: 1}
	labels: {"lab.example.net/team": "vision", "lab.example.net/tier": "burst"}
	taints: [{key: "lab.example.net/gpu", value: "", effect: "NoExecute"}]
	autoscaling: maxNodeProvisionTime: "25m"
}
`,
	"batch.cue": `nodeGroups: batch: {
	kind: "gce"
	zones: ["europe-west4-a"]
	machineType: "n2-standard-4"
	image: "projects/lab-project-7/global/images/family/node"
	min: 0
	max: 5
	labels: "lab.example.net/tier": "batch"
	taints: [{key: "lab.example.net/batch", value: "true", effect: "PreferNoSchedule"}]
}
`,
}

// loadJoinSource writes joinSource (with edits: file → replacement) and
// loads it with every check.
func loadJoinSource(t *testing.T, edits map[string]string) *model.Source {
	t.Helper()
	dir := t.TempDir()
	for name, body := range joinSource {
		if e, ok := edits[name]; ok {
			body = e
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := pipeline.Load(dir)
	if err != nil {
		t.Fatalf("the test source is invalid: %v", err)
	}
	return l.Fleet.Clusters[0]
}

// TestJoinConfigurationMutationsAreCaught breaks the JoinConfiguration
// of a group's startup script in the ways a slip in the renderer could
// and expects gen's verification to reject the result naming the group.
func TestJoinConfigurationMutationsAreCaught(t *testing.T) {
	src := loadJoinSource(t, nil)
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.All(src, files); err != nil {
		t.Fatalf("unbroken renderer: %v", err)
	}
	mutations := []struct {
		name   string
		group  string
		mutate func(*kubeadm.JoinConfiguration)
		want   string
	}{
		{"a label lost", "batch", func(c *kubeadm.JoinConfiguration) {
			setArg(c, "node-labels", strings.Replace(arg(c, "node-labels"), "lab.example.net/tier=batch,", "", 1))
		}, "labels differ"},
		{"a label added", "l4", func(c *kubeadm.JoinConfiguration) {
			setArg(c, "node-labels", arg(c, "node-labels")+",lab.example.net/extra=1")
		}, "labels differ"},
		{"the zone label dropped", "l4", func(c *kubeadm.JoinConfiguration) {
			setArg(c, "node-labels", strings.Replace(arg(c, "node-labels"), ",topology.kubernetes.io/zone="+model.ZonePlaceholder, "", 1))
		}, "node label topology.kubernetes.io/zone"},
		{"a taint's effect changed", "batch", func(c *kubeadm.JoinConfiguration) {
			c.NodeRegistration.Taints[0].Effect = corev1.TaintEffectNoSchedule
		}, "taints differ"},
		{"the startup taint lost", "l4", func(c *kubeadm.JoinConfiguration) {
			c.NodeRegistration.Taints = c.NodeRegistration.Taints[:len(c.NodeRegistration.Taints)-1]
		}, "startup taint"},
		{"taints nil", "ca", func(c *kubeadm.JoinConfiguration) { c.NodeRegistration.Taints = nil }, "taints differ"},
		{"provider-id in the region", "batch", func(c *kubeadm.JoinConfiguration) {
			setArg(c, "provider-id", "gce://lab-project-7/europe-west4/"+model.InstancePlaceholder)
		}, "provider-id"},
		{"node name fixed", "ca", func(c *kubeadm.JoinConfiguration) { c.NodeRegistration.Name = "lab-ca" }, "node name"},
		{"another endpoint", "l4", func(c *kubeadm.JoinConfiguration) {
			c.Discovery.BootstrapToken.APIServerEndpoint = "10.0.0.1:6443"
		}, "apiServerEndpoint"},
		{"token left out", "batch", func(c *kubeadm.JoinConfiguration) { c.Discovery.BootstrapToken.Token = "abcdef.abcdefabcdefabcd" }, "token"},
		{"a stray '@'", "batch", func(c *kubeadm.JoinConfiguration) {
			c.NodeRegistration.Taints[0].Value = "a@b"
		}, "'@' outside its placeholders"},
		{"a placeholder in a plain scalar that could resolve to a non-string", "ca", func(c *kubeadm.JoinConfiguration) {
			c.NodeRegistration.Name = "n" + model.InstancePlaceholder
		}, "neither a quoted scalar of its own"},
		{"v1beta3 apiVersion", "ca", func(c *kubeadm.JoinConfiguration) { c.APIVersion = "kubeadm.k8s.io/v1beta3" }, "want kubeadm.k8s.io/v1beta4"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			// The broken configuration in place of the group's in its
			// startup script, as a slip in the renderer would write it.
			p := layout.StartupScriptPath(m.group)
			doc, err := verify.JoinTemplateOf(files[p])
			if err != nil {
				t.Fatal(err)
			}
			c, err := kubeadm.DecodeJoinConfiguration(doc)
			if err != nil {
				t.Fatal(err)
			}
			m.mutate(c)
			bad, err := yamlout.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			broken := maps.Clone(files)
			broken[p] = bytes.Replace(files[p], doc, bad, 1)
			if bytes.Equal(broken[p], files[p]) {
				t.Fatalf("the startup script of %s does not carry its join configuration as rendered", m.group)
			}
			err = verify.All(src, broken)
			if err == nil {
				t.Fatal("verification accepted the broken JoinConfiguration")
			}
			if !strings.Contains(err.Error(), "group "+m.group) || !strings.Contains(err.Error(), layout.StartupScriptPath(m.group)) || !strings.Contains(err.Error(), m.want) {
				t.Errorf("verification: %v\nwant an error naming group %s and containing %q", err, m.group, m.want)
			}
			for _, other := range src.Groups() {
				if other.Cloud() && other.Name != m.group && strings.Contains(err.Error(), layout.StartupScriptPath(other.Name)) {
					t.Errorf("verification blames the unbroken group %s: %v", other.Name, err)
				}
			}
		})
	}
}

func arg(c *kubeadm.JoinConfiguration, name string) string {
	v, _ := c.ExtraArg(name)
	return v
}

func setArg(c *kubeadm.JoinConfiguration, name, value string) {
	for i := range c.NodeRegistration.KubeletExtraArgs {
		if c.NodeRegistration.KubeletExtraArgs[i].Name == name {
			c.NodeRegistration.KubeletExtraArgs[i].Value = value
		}
	}
}

var renderedDeadline = regexp.MustCompile(`(?m)^readonly JOIN_DEADLINE=([0-9]+)$`)

// TestJoinDeadline: the deadline rendered into each script is the group's
// effective maxNodeProvisionTime (its own, else the cluster's; always the
// cluster's for gce-static) less the boot and registration margins, and
// kubeadm's own timeouts fit in it.
func TestJoinDeadline(t *testing.T) {
	src := loadJoinSource(t, nil)
	files, err := render.All(src)
	if err != nil {
		t.Fatal(err)
	}
	margin := model.JoinBootMargin + model.JoinRegistrationMargin
	for group, mnpt := range map[string]time.Duration{"l4": 25 * time.Minute, "batch": 12 * time.Minute, "ca": 12 * time.Minute} {
		script := files[layout.StartupScriptPath(group)]
		m := renderedDeadline.FindSubmatch(script)
		if m == nil {
			t.Fatalf("%s: no JOIN_DEADLINE in the script", group)
		}
		got, _ := strconv.Atoi(string(m[1]))
		if want := int((mnpt - margin) / time.Second); got != want {
			t.Errorf("%s: deadline %ds, want %ds (maxNodeProvisionTime %s less %s)", group, got, want, mnpt, margin)
		}
		doc, err := verify.JoinTemplateOf(script)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := kubeadm.DecodeJoinConfiguration(doc)
		if err != nil {
			t.Fatal(err)
		}
		to := cfg.Timeouts
		if to == nil || to.Discovery == nil || to.TLSBootstrap == nil || to.KubernetesAPICall == nil {
			t.Fatalf("%s: timeouts %+v", group, to)
		}
		if sum := to.Discovery.Duration + to.TLSBootstrap.Duration; sum > mnpt-margin {
			t.Errorf("%s: discovery %s + TLS bootstrap %s exceed the deadline %s", group, to.Discovery, to.TLSBootstrap, mnpt-margin)
		}
	}

	// A maxNodeProvisionTime that leaves no time to join is a source error.
	dir := t.TempDir()
	for name, body := range joinSource {
		if name == "batch.cue" {
			body = strings.Replace(body, "max: 5\n", "max: 5\n\tautoscaling: maxNodeProvisionTime: \"5m\"\n", 1)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = pipeline.Load(dir)
	if err == nil || !strings.Contains(err.Error(), `nodeGroups.batch.autoscaling.maxNodeProvisionTime: node group "batch": maxNodeProvisionTime 5m0s leaves the join 1m0s`) {
		t.Errorf("validate: %v", err)
	}
	if err != nil && !strings.Contains(err.Error(), "batch.cue:") {
		t.Errorf("the error has no file position: %v", err)
	}
}
