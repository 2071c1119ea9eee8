package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Which autoscaler arguments name a MIG: --nodes with its URL (any https
// host, as the autoscaler's ParseMigUrl), written with "=" or as two
// arguments, or a MIG auto-discovery prefix its name matches; not
// another zone's or project's MIG of the same name, nor a prefix with
// nothing after it.
func TestNamesMIG(t *testing.T) {
	const url = "https://www.googleapis.com/compute/v1/projects/p/zones/z1/instanceGroups/c-g-z1"
	for _, c := range []struct {
		name    string
		command []string
		args    []string
		want    string
	}{
		{"nodes=", nil, []string{"--cloud-provider=gce", "--nodes=0:4:" + url}, "--nodes=0:4:" + url},
		{"nodes apart", nil, []string{"--nodes", "1:3:" + url}, "--nodes=1:3:" + url},
		{"in the command", []string{"./cluster-autoscaler", "--nodes=0:4:" + url}, nil, "--nodes=0:4:" + url},
		{"other host", nil, []string{"--nodes=0:4:https://compute.example/compute/v1/projects/p/zones/z1/instanceGroups/c-g-z1"}, "--nodes=0:4:https://compute.example/compute/v1/projects/p/zones/z1/instanceGroups/c-g-z1"},
		{"other zone", nil, []string{"--nodes=0:4:https://www.googleapis.com/compute/v1/projects/p/zones/z2/instanceGroups/c-g-z1"}, ""},
		{"other project", nil, []string{"--nodes=0:4:https://www.googleapis.com/compute/v1/projects/q/zones/z1/instanceGroups/c-g-z1"}, ""},
		{"other MIG", nil, []string{"--nodes=0:4:" + url + "x"}, ""},
		{"discovered", nil, []string{"--node-group-auto-discovery=mig:namePrefix=c-g-,min=0,max=4"}, "--node-group-auto-discovery=mig:namePrefix=c-g-,min=0,max=4"},
		{"discovered: the whole name", nil, []string{"--node-group-auto-discovery=mig:namePrefix=c-g-z1,min=0,max=4"}, ""},
		{"not a flag", nil, []string{"nodes=0:4:" + url}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &appsv1.Deployment{}
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "other", Args: []string{"--v=4"}}, {Name: "cluster-autoscaler", Command: c.command, Args: c.args}}
			if got := namesMIG(d, "p", "z1", "c-g-z1"); got != c.want {
				t.Errorf("namesMIG = %q, want %q", got, c.want)
			}
		})
	}
}
