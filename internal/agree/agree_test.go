package agree_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/agree"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// join runs the group's real startup script in zone and returns the node
// it registers.
func join(t *testing.T, src *model.Source, files layout.Files, g *model.NodeGroup, zone string) agree.Joined {
	t.Helper()
	vm := scripttest.VM{
		Project:       src.Cluster.GCP.Project,
		NumericID:     "123456789012",
		Zone:          zone,
		Instance:      src.Cluster.BaseInstanceName(g) + "-x7k2",
		JoinToken:     "abcdef.0123456789abcdef",
		Secret:        src.Cluster.JoinToken.SecretManager.Secret,
		SecretVersion: src.Cluster.JoinToken.SecretManager.Version,
	}
	res := scripttest.Run(t, files[layout.StartupScriptPath(g.Name)], vm, scripttest.Options{})
	if res.ExitCode != 0 || len(res.JoinConfigs) != 1 {
		t.Fatalf("startup script: exit %d, %d joins\n%s", res.ExitCode, len(res.JoinConfigs), res.Stderr)
	}
	cfg, err := kubeadm.DecodeJoinConfiguration(res.JoinConfigs[0])
	if err != nil {
		t.Fatalf("strict decode of the JoinConfiguration: %v\n%s", err, res.JoinConfigs[0])
	}
	if got := cfg.Discovery.BootstrapToken; got == nil || got.Token != vm.JoinToken || got.APIServerEndpoint != src.Cluster.ControlPlaneEndpoint ||
		fmt.Sprint(got.CACertHashes) != fmt.Sprint(src.Cluster.CACertHashes) {
		t.Errorf("discovery = %+v", got)
	}
	node, err := agree.FromJoinConfiguration(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if node.Name != vm.Instance {
		t.Errorf("node name %q, want the instance name %q", node.Name, vm.Instance)
	}
	return node
}

// TestKubeEnvAgreesWithJoin is the promise: for every cloud group and zone
// of the example, what the autoscaler reads from kube-env is what the
// node registers with at join, minus the startup taint, and is the source.
func TestKubeEnvAgreesWithJoin(t *testing.T) {
	src, files := testsrc.Example(t)
	flagged := src.ExtraStartupTaints()
	n := 0
	for _, g := range src.Groups() {
		if !g.Cloud() {
			if _, ok := files[layout.KubeEnvPath(g.Name)]; ok {
				t.Errorf("%s group %s has a kube-env", g.Kind, g.Name)
			}
			continue
		}
		for _, zone := range g.Zones {
			t.Run(g.Name+"/"+zone, func(t *testing.T) {
				node := join(t, src, files, g, zone)
				if err := check(&src.Cluster, g, files[layout.KubeEnvPath(g.Name)], flagged, node, zone); err != nil {
					t.Error(err)
				}
				if g.GPU != nil {
					if node.Labels[model.GPULabel] != g.GPU.Type {
						t.Errorf("GPU node joins without %s=%s", model.GPULabel, g.GPU.Type)
					}
					if g.StartupTaint == nil || !strings.HasPrefix(g.StartupTaint.Key, model.StartupTaintPrefix) {
						t.Errorf("GPU group without a recognised startup taint: %+v", g.StartupTaint)
					}
				}
			})
			n++
		}
	}
	if n < 4 {
		t.Fatalf("checked %d group/zone pairs; the example has at least 4", n)
	}
}

// TestCheckCatchesBrokenSides breaks one side on purpose and expects the
// check to name the difference.
func TestCheckCatchesBrokenSides(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["gpu-t4"]
	zone := g.Zones[0]
	env := files[layout.KubeEnvPath(g.Name)]
	node := join(t, src, files, g, zone)
	if err := check(&src.Cluster, g, env, nil, node, zone); err != nil {
		t.Fatalf("unbroken: %v", err)
	}
	cases := []struct {
		name  string
		env   []byte
		node  func(agree.Joined) agree.Joined
		wants string
	}{
		{
			name:  "kube-env lost its taint",
			env:   bytes.Replace(env, []byte(";node_taints=nvidia.com/gpu=present:NoSchedule"), nil, 1),
			wants: "taints differ: kube-env [], join [nvidia.com/gpu=present:NoSchedule]",
		},
		{
			name:  "kube-env has an extra label",
			env:   bytes.Replace(env, []byte("node_labels="), []byte("node_labels=example.com/extra=1,"), 1),
			wants: "labels differ: kube-env",
		},
		{
			name: "join lost a label",
			node: func(j agree.Joined) agree.Joined {
				delete(j.Labels, "example.com/pool")
				return j
			},
			wants: "labels differ: kube-env",
		},
		{
			name: "join lost the startup taint",
			node: func(j agree.Joined) agree.Joined {
				j.Taints = j.Taints[:len(j.Taints)-1]
				return j
			},
			wants: "startup taint",
		},
		{
			name: "join in another zone's region",
			node: func(j agree.Joined) agree.Joined {
				j.Labels[model.RegionLabel] = "europe-west4"
				return j
			},
			wants: "node label topology.kubernetes.io/region",
		},
		{
			name:  "kube-env with a trailing semicolon",
			env:   bytes.Replace(env, []byte("os=linux;"), []byte("os=linux;;"), 1),
			wants: "malformed autoscaler var",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := env
			if c.env != nil {
				if bytes.Equal(c.env, env) {
					t.Fatal("the case did not change kube-env")
				}
				e = c.env
			}
			n := node
			n.Labels = cloneMap(node.Labels)
			n.Taints = append([]model.Taint(nil), node.Taints...)
			if c.node != nil {
				n = c.node(n)
			}
			err := check(&src.Cluster, g, e, nil, n, zone)
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("got %v, want an error containing %q", err, c.wants)
			}
		})
	}
}

func cloneMap(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// check reads kubeEnv the autoscaler's way and compares it, with
// agree.CheckTemplate, with node.
func check(cl *model.Cluster, g *model.NodeGroup, kubeEnv []byte, flagged []string, node agree.Joined, zone string) error {
	tmpl, err := kubeenv.ReadTemplate(kubeEnv)
	if err != nil {
		return fmt.Errorf("kube-env: %w", err)
	}
	return agree.CheckTemplate(cl, g, tmpl, flagged, node, zone)
}
