package source_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// The fleet form decodes into one Source per cluster, in name order, with
// the definitions and hidden fields of one file used in the others, and
// the mesh.
func TestLoadFleet(t *testing.T) {
	l, err := source.Load(testsrc.FleetDir())
	if err != nil {
		t.Fatal(err)
	}
	f := l.Fleet
	if f == nil || f.Single || len(f.Clusters) != 2 || len(l.Members) != 2 {
		t.Fatalf("fleet = %+v, members %d", f, len(l.Members))
	}
	serve, train := f.Cluster("serve"), f.Cluster("train")
	if serve == nil || train == nil || f.Clusters[0] != serve || f.Clusters[1] != train {
		t.Fatalf("clusters = %v, %v", f.Clusters[0].Cluster.Name, f.Clusters[1].Cluster.Name)
	}
	// cluster.name defaults to the key; the shared base is filled in.
	if serve.Cluster.KubernetesVersion != "1.35.2" || train.Cluster.ControlPlaneEndpoint != "10.30.0.10:6443" || serve.Cluster.ControlPlaneEndpoint != "10.20.0.10:6443" {
		t.Errorf("cluster fields: serve %+v, train %+v", serve.Cluster, train.Cluster)
	}
	if s := train.Cluster.JoinToken.SecretManager; s == nil || s.Secret != "train-join-token" {
		t.Errorf("train's join token = %+v", s)
	}
	if s := serve.Cluster.JoinToken.SecretManager; s == nil || s.Secret != "kubeadm-join-token" {
		t.Errorf("serve's join token = %+v", s)
	}
	// The hidden group is shared, with one field changed in train.
	sg, tg := serve.NodeGroups["gpu-t4"], train.NodeGroups["gpu-t4"]
	if sg == nil || tg == nil || sg.Max != 4 || tg.Max != 8 || sg.MachineType != "n1-standard-8" || tg.MachineType != "n1-standard-8" {
		t.Fatalf("gpu-t4: serve %+v, train %+v", sg, tg)
	}
	// The definition, and the derived identity label per cluster.
	for _, c := range f.Clusters {
		a := c.NodeGroups["autoscaler"]
		if a == nil || a.Kind != model.KindGCEStatic || a.NodeLabels[model.GroupLabel] != "autoscaler" {
			t.Errorf("%s: autoscaler = %+v", c.Cluster.Name, a)
		}
	}
	if _, ok := serve.NodeGroups["onprem-gpu"]; ok {
		t.Error("serve has train's group")
	}
	if serve.Origins["gateway"] != "fleet/serve.cue" || train.Origins["onprem-gpu"] != "fleet/train.cue" || train.ClusterOrigin != "fleet/train.cue" {
		t.Errorf("origins: %v %v %q", serve.Origins, train.Origins, train.ClusterOrigin)
	}
	m := f.Mesh
	if m == nil || m.ID != "acme-mesh" || m.Model != model.MeshPrimaryRemote || len(m.Clusters) != 2 {
		t.Fatalf("mesh = %+v", m)
	}
	if c := m.Clusters["serve"]; c.Role != model.MeshRolePrimary || c.Network != "net-cloud" || c.EastWestGateway.NodeGroup != "gateway" || c.EastWestGateway.Replicas != 2 || c.EastWestGateway.Address != "10.20.1.10" {
		t.Errorf("mesh serve = %+v", c)
	}
	if c := m.Clusters["train"]; c.Role != model.MeshRoleRemote || c.Network != "net-onprem" || c.EastWestGateway.ServiceType() != model.ServiceClusterIP || c.EastWestGateway.ReachedThrough == nil || c.EastWestGateway.ReachedThrough.Router == nil || c.EastWestGateway.Address != "10.30.1.10" {
		t.Errorf("mesh train = %+v", c)
	}
	if serve.Tree != "serve/" || train.Tree != "train/" {
		t.Errorf("trees %q, %q", serve.Tree, train.Tree)
	}
	for i, mb := range l.Members {
		if mb.Source != f.Clusters[i] || mb.Prefix != "clusters."+mb.Key || l.Member(mb.Key) != mb {
			t.Errorf("member %d: key %q prefix %q", i, mb.Key, mb.Prefix)
		}
		if p := mb.Pos(); !strings.HasSuffix(p.Filename(), mb.Key+".cue") {
			t.Errorf("member %s is at %v", mb.Key, p)
		}
	}
}

// The one-cluster form is a fleet of one, Single, whose one member is the
// cluster at the root of the source.
func TestLoadSingleIsFleetOfOne(t *testing.T) {
	l, err := source.Load(testsrc.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Members) != 1 {
		t.Fatalf("%d members, want 1", len(l.Members))
	}
	m := l.Members[0]
	if l.Fleet == nil || !l.Fleet.Single || len(l.Fleet.Clusters) != 1 || l.Fleet.Clusters[0] != m.Source || l.Fleet.Mesh != nil {
		t.Fatalf("fleet = %+v", l.Fleet)
	}
	if m.Prefix != "" || m.Key != "" || m.Source.Tree != "" || m.Source.Cluster.Name != "hybrid-ai" {
		t.Fatalf("member: prefix %q, key %q, tree %q, cluster %q", m.Prefix, m.Key, m.Source.Tree, m.Source.Cluster.Name)
	}
	// The member's positions are the root's: its paths are from the root.
	if p, q := m.Pos(cue.Str("cluster"), cue.Str("name")), l.Pos(cue.Str("cluster"), cue.Str("name")); !p.IsValid() || p != q {
		t.Errorf("cluster.name at %v in the member, %v in the source", p, q)
	}
}

// Problems inside a fleet's cluster and its mesh are reported at their
// file, line and column with their path from the root; the other cluster
// still decodes.
func TestFleetFindings(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits map[string]string
		want  []string
	}{
		{"group field", map[string]string{"train.cue": strings.Replace(readFleet(t, "train.cue"), `count: 8}`, `count: "8"}`, 1)},
			[]string{`train.cue:14:44: clusters.train.nodeGroups."onprem-gpu".gpu.count: want an int, not a string ("8")`}},
		{"cluster field", map[string]string{"serve.cue": strings.Replace(readFleet(t, "serve.cue"), `"10.20.0.10:6443"`, `"10.20.0.10"`, 1)},
			[]string{`serve.cue:4:25: clusters.serve.cluster.controlPlaneEndpoint: invalid value "10.20.0.10"`}},
		{"unknown group field", map[string]string{"train.cue": strings.Replace(readFleet(t, "train.cue"), `description: "On-prem A100 servers"`, `descripton: "On-prem A100 servers"`, 1)},
			[]string{`train.cue:13:4: clusters.train.nodeGroups."onprem-gpu".descripton: field not allowed; did you mean description?`}},
		{"mesh field", map[string]string{"mesh.cue": strings.Replace(readFleet(t, "mesh.cue"), `role:    "remote"`, `role:    "remot"`, 1)},
			[]string{`mesh.cue:15:13: mesh.clusters.train.role: "remot" is not one of "primary" or "remote"; did you mean "remote"?`}},
		{"bad cluster key", map[string]string{"train.cue": strings.Replace(readFleet(t, "train.cue"), `clusters: train:`, `clusters: Train:`, 1)},
			[]string{`train.cue:2:11: clusters.Train: invalid cluster name "Train"`}},
		{"name differs from key", map[string]string{"train.cue": strings.Replace(readFleet(t, "train.cue"), `controlPlaneEndpoint: "10.30.0.10:6443"`, `name: "train2", controlPlaneEndpoint: "10.30.0.10:6443"`, 1)},
			[]string{`train.cue:4:9: clusters.train.cluster.name: cluster name "train2" differs from its key "train" in clusters`}},
		{"name of another cluster", map[string]string{"train.cue": strings.Replace(readFleet(t, "train.cue"), `controlPlaneEndpoint: "10.30.0.10:6443"`, `name: "serve", controlPlaneEndpoint: "10.30.0.10:6443"`, 1)},
			[]string{`train.cue:4:9: clusters.train.cluster.name: cluster name "serve" is the key of another cluster in clusters`}},
		{"missing cluster field", map[string]string{"train.cue": strings.Replace(readFleet(t, "train.cue"), `controlPlaneEndpoint: "10.30.0.10:6443"`, ``, 1)},
			[]string{`train.cue:3:2: clusters.train.cluster.controlPlaneEndpoint: required field is missing (host:port of the kube-apiserver`}},
		{"missing kind", map[string]string{"train.cue": strings.Replace(readFleet(t, "train.cue"), `kind:        "onprem"`, ``, 1)},
			[]string{`train.cue:11:3: clusters.train.nodeGroups."onprem-gpu".kind: required field is missing ("gce": MIGs the autoscaler sizes`}},
		{"cluster without cluster", map[string]string{"x.cue": "clusters: x: nodeGroups: {}\n"},
			[]string{`x.cue:1:11: clusters.x.cluster: required field is missing (The cluster the node groups join)`}},
		{"mixed forms", map[string]string{"single.cue": "nodeGroups: x: {kind: \"onprem\"}\ncluster: name: \"x\"\n"},
			[]string{
				`single.cue:1:1: nodeGroups: a source is either one cluster (top-level cluster and nodeGroups) or a fleet (top-level clusters), not both`,
				`single.cue:2:1: cluster: a source is either one cluster`,
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testsrc.CopyFleet(t, c.edits)
			l, err := source.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := l.Findings.Sorted().Error()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("findings:\n%s\nwant one containing\n%s", got, w)
				}
			}
			if len(l.Findings) != len(c.want) {
				t.Errorf("%d findings, want %d:\n%s", len(l.Findings), len(c.want), got)
			}
		})
	}
}

// A fleet's broken cluster does not keep the other from decoding.
func TestFleetPartialDecode(t *testing.T) {
	dir := testsrc.CopyFleet(t, map[string]string{"train.cue": strings.Replace(readFleet(t, "train.cue"), `count: 8}`, `count: "8"}`, 1)})
	l, err := source.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tr := l.Member("train")
	if tr == nil || !tr.Broken.Groups["onprem-gpu"] || tr.Broken.Cluster || tr.Source.NodeGroups["gpu-t4"] == nil {
		t.Fatalf("train: %+v", tr)
	}
	sv := l.Member("serve")
	if sv == nil || sv.Broken.All || sv.Broken.Cluster || len(sv.Broken.Groups) > 0 || len(sv.Source.NodeGroups) != 3 {
		t.Fatalf("serve: %+v", sv)
	}
	if l.Fleet.Mesh == nil {
		t.Error("the mesh did not decode")
	}
}

// A mesh needs a fleet: in a one-cluster source it is reported where it
// is written.
func TestMeshInOneClusterSource(t *testing.T) {
	dir := testsrc.Copy(t, map[string]string{"mesh.cue": "mesh: {\n\tid: \"m\"\n\tclusters: {}\n}\n"})
	_, err := source.Load(dir)
	if err == nil || !strings.Contains(err.Error(), "mesh.cue:1:1: mesh: a mesh joins the clusters of a fleet, and this source is one cluster") {
		t.Fatalf("err = %v", err)
	}
}

// Files without a package clause share their definitions and hidden
// fields, in the one-cluster form too.
func TestSharedAcrossFiles(t *testing.T) {
	dir := testsrc.Copy(t, map[string]string{
		"base.cue":  "_burst: {\n\tkind: \"gce\"\n\tzones: [\"us-central1-a\"]\n\tmachineType: \"n2-standard-8\"\n\timage: \"projects/p/global/images/i\"\n\tmin: 0\n\tmax: *3 | int\n}\n#Lab: {labels: \"example.com/lab\": \"yes\", ...}\n",
		"burst.cue": "nodeGroups: \"burst-a\": _burst & #Lab\nnodeGroups: \"burst-b\": _burst & {max: 5}\n",
	})
	l, err := source.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b := l.Fleet.Clusters[0].NodeGroups["burst-a"], l.Fleet.Clusters[0].NodeGroups["burst-b"]
	if a == nil || b == nil || a.Max != 3 || b.Max != 5 || a.Labels["example.com/lab"] != "yes" || b.MachineType != "n2-standard-8" {
		t.Fatalf("burst-a %+v, burst-b %+v", a, b)
	}
}

func readFleet(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testsrc.FleetDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
