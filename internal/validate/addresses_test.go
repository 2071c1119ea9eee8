package validate_test

import (
	"strings"
	"testing"
)

// The address rules on the tests' fleet: each case's findings, reported
// at the value.
func TestAddressRules(t *testing.T) {
	const cp = `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "gateway", address: %q}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "onprem-gpu"}
	}
}
`
	for _, tc := range []struct {
		name, mesh, reach string
		want              []string
	}{
		{"valid", strings.Replace(cp, "%q", `"10.20.1.10"`, 1), "", nil},
		{"every special class", strings.Replace(cp, "%q", `"169.254.169.254"`, 1), "", []string{
			`mesh.cue:4:99: mesh.clusters.serve.eastWestGateway.address: the gateway's address 169.254.169.254 is in the link-local range`,
		}},
		{"control plane's", strings.Replace(cp, "%q", `"10.30.0.10"`, 1), "", []string{
			`mesh.cue:4:99: mesh.clusters.serve.eastWestGateway.address: the gateway's address 10.30.0.10 is the address of cluster "train"'s API server`,
		}},
		{"ranges", strings.Replace(cp, "%q", `"10.30.7.1"`, 1), `mesh: clusters: {
	serve: eastWestGateway: reachedThrough: internalLoadBalancer: sourceRanges: ["10.30.0.0/16", "10.40.0.0/31"]
	train: eastWestGateway: {address: "10.30.255.255", reachedThrough: router: {}}
}
mesh: trust: pluginCA: {}
`, []string{
			`mesh.cue:4:99: mesh.clusters.serve.eastWestGateway.address: the gateway's address 10.30.7.1 is inside 10.30.0.0/16 (sourceRanges[0] of its own internal load balancer)`,
			`reach.cue:3:36: mesh.clusters.train.eastWestGateway.address: the gateway's address 10.30.255.255 is the broadcast address of 10.30.0.0/16`,
		}},
		{"a /31 has no network or broadcast address", strings.Replace(cp, "%q", `"10.20.1.10"`, 1), `mesh: clusters: {
	serve: eastWestGateway: reachedThrough: internalLoadBalancer: sourceRanges: ["10.40.0.0/31"]
	train: eastWestGateway: {address: "10.40.0.1", reachedThrough: router: {}}
}
mesh: trust: pluginCA: {}
`, nil},
		{"load-balancer controller", strings.Replace(cp, "%q", `"10.20.1.10"`, 1), `mesh: clusters: {
	serve: eastWestGateway: reachedThrough: internalLoadBalancer: {}
	train: eastWestGateway: {address: "10.30.1.10", reachedThrough: loadBalancerController: name: "MetalLB", service: loadBalancerIP: "10.30.1.11"}
}
mesh: trust: pluginCA: {}
`, []string{
			`reach.cue:3:132: mesh.clusters.train.eastWestGateway.service.loadBalancerIP: the load-balancer controller "MetalLB" gives the gateway's Service 10.30.1.11`,
		}},
		{"load-balancer address multicast, gateway named by DNS", strings.Replace(cp, "%q", `"10.20.1.10"`, 1), `mesh: clusters: {
	serve: eastWestGateway: reachedThrough: internalLoadBalancer: {}
	train: eastWestGateway: {address: "gw.train.example", reachedThrough: loadBalancerController: name: "MetalLB", service: loadBalancerIP: "224.0.1.1"}
}
mesh: trust: pluginCA: {}
`, []string{
			`reach.cue:3:138: mesh.clusters.train.eastWestGateway.service.loadBalancerIP: the load-balancer address 224.0.1.1 is a multicast address`,
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

// controlPlaneEndpoint: the cloud nodes reach it over the VPN, so no
// loopback, unspecified, link-local or multicast host.
func TestEndpointHost(t *testing.T) {
	for host, want := range map[string]string{
		"10.20.0.10":        "",
		"cp.example.com":    "",
		"127.0.0.1":         "is in the loopback range",
		"127.1.2.3":         "is in the loopback range",
		"localhost":         `host "localhost" is the loopback address`,
		"api.localhost":     `host "api.localhost" is the loopback address`,
		"0.0.0.0":           "is the unspecified address",
		"169.254.169.254":   "is in the link-local range",
		"239.0.0.1":         "is a multicast address",
		"255.255.255.255":   "is the limited broadcast address",
		"localhost.example": "",
	} {
		t.Run(host, func(t *testing.T) {
			dir := example(t, nil)
			if host != "10.20.0.10" {
				dir = example(t, map[string]func(string) string{"cluster.cue": replace(`"10.20.0.10:6443"`, `"`+host+`:6443"`)})
			}
			got := findings(t, dir)
			if want == "" {
				if len(got) != 0 {
					t.Fatalf("findings: %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], "nodegroups/cluster.cue:6:24: cluster.controlPlaneEndpoint: ") || !strings.Contains(got[0], want) {
				t.Fatalf("findings %v, want one at controlPlaneEndpoint containing %q", got, want)
			}
		})
	}
}
