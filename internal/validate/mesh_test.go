package validate_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/meshtest"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/validate"
)

// meshFindings loads the tests' fleet with files replaced and returns
// its findings, file names relative to the source.
func meshFindings(t *testing.T, files map[string]string) []string {
	t.Helper()
	if _, ok := files[reachFile]; !ok {
		files[reachFile] = reach
	}
	dir := testsrc.CopyFleet(t, files)
	_, err := pipeline.Load(dir)
	if err == nil {
		return nil
	}
	var list diag.List
	if !errors.As(err, &list) {
		t.Fatalf("Load: %v", err)
	}
	var out []string
	for _, f := range list {
		out = append(out, f.Format(dir))
	}
	return out
}

// reach is what provides both gateways' addresses, in a file of its own
// so that the rules' cases keep their positions: serve's internal load
// balancer, a router for train.
const (
	reachFile = "reach.cue"
	reach     = `mesh: clusters: {
	serve: eastWestGateway: reachedThrough: internalLoadBalancer: {}
	train: eastWestGateway: {address: "10.30.1.10", reachedThrough: router: {}}
}
mesh: clusters: train: eastWestGateway: extraPorts: [...{gateway: "apps/own-gateway"}]
mesh: trust: pluginCA: {}
`
)

const meshHead = `mesh: {
	id: "acme-mesh"
`

// Each rule of validate.Mesh, on the tests' fleet (serve: autoscaler,
// gateway (gce-static, 2), gpu-t4 (gce, min 0); train: autoscaler, gpu-t4,
// onprem-gpu (onprem)), reported at the value that breaks it.
func TestMeshRules(t *testing.T) {
	for _, tc := range []struct {
		name, mesh string
		want       []string // findings, each "line:col: path: message" start
	}{
		{"valid", `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10"}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}`, nil},
		{"one network", `	clusters: {
		serve: {role: "primary", network: "net-1", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10"}}
		train: {role: "remote", network: "net-1", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}`, []string{`mesh.cue:5:36: mesh.clusters.train.network: clusters "serve" and "train" are both on network "net-1"`}},
		{"remote without primary", `	clusters: {
		serve: {role: "remote", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10"}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}`, []string{
			`mesh.cue:4:17: mesh.clusters.serve.role: remote "serve" has no primary`,
			`mesh.cue:5:17: mesh.clusters.train.role: remote "train" has no primary`,
		}},
		{"primary names a remote", `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10"}}
		train: {role: "remote", primary: "train", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}`, []string{`mesh.cue:5:36: mesh.clusters.train.primary: "train" is a remote, not a primary`}},
		{"primary typo", `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10"}}
		train: {role: "remote", primary: "serv", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}`, []string{`mesh.cue:5:36: mesh.clusters.train.primary: no cluster "serv" in the mesh; did you mean "serve"?`}},
		{"remote in multi-primary", `	model: "multi-primary"
	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10"}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}`, []string{`mesh.cue:6:17: mesh.clusters.train.role: a multi-primary mesh has no remotes`}},
		{"primary without address", `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: nodeGroup: "gateway"}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}`, []string{`reach.cue:2:26: mesh.clusters.serve.eastWestGateway: remotes "train" reach the istiod of "serve" through its east-west gateway: set address`}},
		{"gateway group missing", `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gatewy", address: "10.20.1.10"}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}`, []string{`mesh.cue:4:79: mesh.clusters.serve.eastWestGateway.nodeGroup: no node group "gatewy" in cluster "serve"; did you mean "gateway"?`}},
		{"gateway on scale-to-zero group", `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gpu-t4", address: "10.20.1.10"}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}`, []string{`mesh.cue:4:79: mesh.clusters.serve.eastWestGateway.nodeGroup: node group "gpu-t4" is autoscaled (kind "gce", min 0)`}},
		{"extra ports", `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10"}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: {
			nodeGroup: "onprem-gpu"
			extraPorts: [
				{name: "tcp-nats", port: 4222},
				{name: "tcp-bad", port: 15443},
				{name: "tcp-nats", port: 4223},
				{name: "tls", port: 4224},
				{name: "tcp-again", port: 4222},
				{name: "udp-nats", port: 4222, protocol: "UDP"},
			]
		}}
	}
}`, []string{
			`mesh.cue:9:29: mesh.clusters.train.eastWestGateway.extraPorts.1.port: port 15443/TCP is Istio's tls port on the east-west gateway`,
			`mesh.cue:10:12: mesh.clusters.train.eastWestGateway.extraPorts.2.name: port name "tcp-nats" is already used by extra port 4222`,
			`mesh.cue:11:12: mesh.clusters.train.eastWestGateway.extraPorts.3.name: port name "tls" is already used by Istio's own port 15443`,
			`mesh.cue:12:31: mesh.clusters.train.eastWestGateway.extraPorts.4.port: port 4222/TCP is already opened by extra port "tcp-nats"`,
		}},
		{"service", `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10",
			service: {type: "NodePort", loadBalancerIP: "10.20.1.10", annotations: {"bad key!": "x", "example.com/ok": "y"}}}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}`, []string{
			`mesh.cue:5:48: mesh.clusters.serve.eastWestGateway.service.loadBalancerIP: loadBalancerIP applies to a Service of type LoadBalancer, and this one is NodePort`,
			`mesh.cue:5:76: mesh.clusters.serve.eastWestGateway.service.annotations."bad key!": invalid annotation key "bad key!"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := meshFindings(t, map[string]string{"mesh.cue": meshHead + tc.mesh + "\n"})
			if len(got) != len(tc.want) {
				t.Fatalf("findings:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(tc.want), strings.Join(tc.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("finding %d:\n got %s\nwant %s…", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// noPos is a Positioner of a fleet built in Go: no source positions.
type noPos struct{}

func (noPos) Pos(...cue.Selector) token.Pos    { return token.NoPos }
func (noPos) KeyPos(...cue.Selector) token.Pos { return token.NoPos }

// A gce-static gateway group of size 0 has no node for the gateway; an
// onprem group and a gce-static group of size 1 or more are fine.
func TestMeshGatewayGroupSize(t *testing.T) {
	f := meshtest.Fleet()
	all := func(string) *source.Broken { return &source.Broken{} }
	if list := validate.MeshOf(f, noPos{}, all); len(list) > 0 {
		t.Fatalf("valid fleet: %v", list)
	}
	f.Cluster(meshtest.Primary).NodeGroups[meshtest.PrimaryGateway].Min = 0
	list := validate.MeshOf(f, noPos{}, all)
	if len(list) != 1 || list[0].Path != "mesh.clusters.cloud.eastWestGateway.nodeGroup" || !strings.Contains(list[0].Msg, `node group "edge" has size 0`) {
		t.Errorf("gce-static gateway group of size 0: %v", list)
	}
}

// The schema pins istioVersion to a release number.
func TestMeshIstioVersion(t *testing.T) {
	mesh := `	istioVersion: %s
	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10"}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}
`
	if got := meshFindings(t, map[string]string{"mesh.cue": meshHead + fmt.Sprintf(mesh, `"1.30.3"`)}); got != nil {
		t.Errorf("istioVersion 1.30.3: %v", got)
	}
	got := meshFindings(t, map[string]string{"mesh.cue": meshHead + fmt.Sprintf(mesh, `"latest"`)})
	if len(got) != 1 || !strings.HasPrefix(got[0], "mesh.cue:3:16: mesh.istioVersion: ") {
		t.Errorf("istioVersion latest: %v", got)
	}
}

// The mesh topologies that pass Istio's schema and do not work, each
// reported at its value: two primaries of a primary-remote mesh without
// one root of trust, one gateway address in two clusters, the gateway on
// a Spot group, extra ports on the gateway pod's own target ports or on
// one another's.
func TestMeshTopologies(t *testing.T) {
	for _, tc := range []struct {
		name, mesh, reach string
		want              []string
	}{
		{name: "two primaries without trust", mesh: `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10"}}
		train: {role: "primary", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}
`, reach: `mesh: clusters: {
	serve: eastWestGateway: reachedThrough: internalLoadBalancer: {}
	train: eastWestGateway: {address: "10.30.1.10", reachedThrough: router: {}}
}
`, want: []string{`reach.cue:1:7: mesh.model: the primary-remote mesh has 2 primaries ("serve", "train")`}},
		{name: "one address twice", mesh: `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.30.1.10"}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}
`, want: []string{`reach.cue:3:36: mesh.clusters.train.eastWestGateway.address: address 10.30.1.10 is also the east-west gateway address of cluster "serve"`}},
		{name: "target ports", mesh: `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: "10.20.1.10"}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: {
			nodeGroup: "onprem-gpu"
			extraPorts: [
				{name: "tcp-a", port: 8443, targetPort: 15443},
				{name: "tcp-b", port: 15090},
				{name: "tcp-c", port: 4222, targetPort: 14222},
				{name: "tcp-d", port: 4223, targetPort: 14222},
				{name: "udp-d", port: 4223, targetPort: 14222, protocol: "UDP"},
			]
		}}
	}
}
`, want: []string{
			`mesh.cue:8:45: mesh.clusters.train.eastWestGateway.extraPorts.0.targetPort: target port 15443/TCP is the gateway's own tls listener`,
			`mesh.cue:9:27: mesh.clusters.train.eastWestGateway.extraPorts.1.port: target port 15090/TCP is the gateway's own Prometheus metrics listener`,
			`mesh.cue:11:45: mesh.clusters.train.eastWestGateway.extraPorts.3.targetPort: target port 14222/TCP is the target port of extra port "tcp-c"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"mesh.cue": meshHead + tc.mesh}
			if tc.reach != "" {
				files[reachFile] = tc.reach
			}
			got := meshFindings(t, files)
			if len(got) != len(tc.want) {
				t.Fatalf("findings:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(tc.want), strings.Join(tc.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("finding %d:\n got %s\nwant %s…", i, got[i], tc.want[i])
				}
			}
		})
	}
}
