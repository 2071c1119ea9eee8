package validate_test

import (
	"strings"
	"testing"
)

// A mesh's east-west gateway may not run on the autoscaler's group, in
// either cluster; the finding is at the gateway's nodeGroup.
func TestGatewayNotOnAutoscalerHome(t *testing.T) {
	got := meshFindings(t, map[string]string{"mesh.cue": meshHead + `	clusters: {
		serve: {role: "primary", network: "net-cloud", eastWestGateway: {nodeGroup: "autoscaler", address: "10.20.1.10"}}
		train: {role: "remote", network: "net-onprem", eastWestGateway: nodeGroup: "autoscaler"}
	}
}
`})
	want := []string{
		`mesh.cue:4:79: mesh.clusters.serve.eastWestGateway.nodeGroup: node group "autoscaler" is the autoscaler's (cluster.autoscaler.nodeGroup): its pods reach the GCE metadata server`,
		`mesh.cue:5:78: mesh.clusters.train.eastWestGateway.nodeGroup: node group "autoscaler" is the autoscaler's`,
	}
	if len(got) != len(want) {
		t.Fatalf("findings:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("finding %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
}
