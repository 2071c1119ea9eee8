package validate_test

import (
	"strings"
	"testing"
)

// cluster.gcp.network: the on-prem ranges are CIDRs that hold the control
// plane, the CNI ports are ports; each finding at its value.
func TestNetworkRules(t *testing.T) {
	for _, tc := range []struct {
		name, network string
		want          []string
	}{
		{"valid", `{name: "vpc", subnetwork: "nodes", onpremRanges: ["10.20.0.0/16"], cniPorts: ["udp/4789", "tcp/30000-32767"]}`, nil},
		{"control plane outside", `{name: "vpc", subnetwork: "nodes", onpremRanges: ["10.30.0.0/16", "192.168.0.0/24"]}`, []string{
			`nodegroups/cluster.cue:14:85: cluster.gcp.network.onpremRanges: the control plane 10.20.0.10 is in none of the on-prem ranges 10.30.0.0/16, 192.168.0.0/24`,
		}},
		{"not a CIDR, host bits", `{name: "vpc", subnetwork: "nodes", onpremRanges: ["10.20.0.0/33", "10.20.0.10/16"]}`, []string{
			`nodegroups/cluster.cue:14:86: cluster.gcp.network.onpremRanges.0: "10.20.0.0/33" is not a CIDR`,
			`nodegroups/cluster.cue:14:102: cluster.gcp.network.onpremRanges.1: 10.20.0.10/16 has host bits set: a firewall rule's range is its network address, 10.20.0.0/16`,
		}},
		{"ports", `{name: "vpc", subnetwork: "nodes", onpremRanges: ["10.0.0.0/8"], cniPorts: ["udp/70000", "tcp/9-8", "tcp/10250"]}`, []string{
			`nodegroups/cluster.cue:14:112: cluster.gcp.network.cniPorts.0: "udp/70000": ports are between 1 and 65535`,
			`nodegroups/cluster.cue:14:125: cluster.gcp.network.cniPorts.1: "tcp/9-8": the range ends below its start`,
			`nodegroups/cluster.cue:14:136: cluster.gcp.network.cniPorts.2: "tcp/10250" is the kubelet's port`,
		}},
		{"metrics ports", `{name: "vpc", subnetwork: "nodes", onpremRanges: ["10.0.0.0/8"], cniPorts: ["tcp/179"], metricsPorts: ["tcp/9100", "tcp/0", "tcp/10250", "tcp/179"]}`, []string{
			`nodegroups/cluster.cue:14:151: cluster.gcp.network.metricsPorts.1: "tcp/0": ports are between 1 and 65535`,
			`nodegroups/cluster.cue:14:160: cluster.gcp.network.metricsPorts.2: "tcp/10250" is the kubelet's port, which the on-prem rule admits already`,
			`nodegroups/cluster.cue:14:173: cluster.gcp.network.metricsPorts.3: "tcp/179" is one of cniPorts, which the on-prem rule admits already`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := example(t, map[string]func(string) string{"cluster.cue": replace(`region:  "us-central1"`, `region:  "us-central1", network: `+tc.network)})
			got := findings(t, dir)
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
