package validate_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/validate"
)

// The autoscaler's release is judged by nodegen's table: a release that
// stops scaling on a node without a providerID is refused, at the value
// that leaves the on-prem nodes without one, unless nodegen gives them
// one; the example passes because it does by default.
func TestAutoscalerReleaseNeedsProviderID(t *testing.T) {
	for _, c := range []struct {
		name, cue string
		want      string // a finding's start, "" for none
	}{
		{"PinnedWithoutWorkaround", "cluster: autoscaler: version: \"v1.35.0\"\ncluster: onpremProviderID: \"none\"\n",
			`nodegroups/zz.cue:2:28: cluster.onpremProviderID: onpremProviderID "none" leaves the control plane and the on-prem nodes without a providerID, and the Cluster Autoscaler v1.35.0 (cluster.autoscaler.version) fails`},
		{"DefaultWithoutWorkaround", "cluster: onpremProviderID: \"none\"\n",
			`nodegroups/zz.cue:1:28: cluster.onpremProviderID: onpremProviderID "none" leaves the control plane and the on-prem nodes without a providerID, and the Cluster Autoscaler v1.35.2 (the default for kubernetesVersion 1.35.2) fails`},
		{"OlderReleaseWithoutWorkaround", "cluster: autoscaler: version: \"v1.34.5\"\ncluster: onpremProviderID: \"none\"\ncluster: autoscaler: acceptUnknownVersion: true\n",
			`nodegroups/zz.cue:2:28: cluster.onpremProviderID: onpremProviderID "none" leaves`},
		{"PinnedWithWorkaround", "cluster: autoscaler: version: \"v1.35.0\"\n", ""},
		{"UnknownReleaseAccepted", "cluster: autoscaler: version: \"v1.35.3\"\ncluster: onpremProviderID: \"none\"\ncluster: autoscaler: acceptUnknownVersion: true\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := example(t, map[string]func(string) string{"zz.cue": func(string) string { return c.cue }})
			got := findings(t, dir)
			if c.want == "" {
				if len(got) != 0 {
					t.Errorf("findings %q, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
				t.Fatalf("findings %q, want one starting %q", got, c.want)
			}
			for _, ref := range []string{"kubernetes/autoscaler#10140", "kubernetes-sigs/cluster-autoscaler#56", "kubernetes-sigs/cluster-autoscaler#103", "kubernetes/autoscaler#10274"} {
				if !strings.Contains(got[0], ref) {
					t.Errorf("the finding does not name %s", ref)
				}
			}
		})
	}
}

// A tag nodegen's table does not know, and a tag of another minor than
// the control plane's, are errors at the tag unless the source accepts
// them (then TestAutoscalerReleaseWarnings' warnings); the default tag of
// a minor the table lacks is refused at the control plane's version.
func TestAutoscalerReleaseRefused(t *testing.T) {
	for _, c := range []struct{ name, cue, want string }{
		{"Unknown", "cluster: autoscaler: version: \"v1.35.9\"\n",
			"nodegroups/zz.cue:1:31: cluster.autoscaler.version: nodegen's table of Cluster Autoscaler releases (newest v1.36.1) does not know cluster.autoscaler.version v1.35.9; a typo, or a release nodegen has not read (docs/autoscaler-version.md lists those it knows); set cluster.autoscaler.acceptUnknownVersion: true to use it on purpose"},
		{"OtherMinor", "cluster: autoscaler: version: \"v1.34.5\"\n",
			"nodegroups/zz.cue:1:31: cluster.autoscaler.version: cluster.autoscaler.version v1.34.5 is for Kubernetes 1.34, the control plane runs 1.35.2"},
		{"DefaultOfUnknownMinor", "cluster: kubernetesVersion: \"1.37.1\"\n",
			"nodegroups/cluster.cue:5:24: cluster.kubernetesVersion: nodegen's table of Cluster Autoscaler releases (newest v1.36.1) does not know the default image tag v1.37.0"},
		{"Accepted", "cluster: autoscaler: version: \"v1.34.5\"\n" + "cluster: autoscaler: acceptUnknownVersion: true\n", ""},
		{"AcceptedDefaultOfUnknownMinor", "cluster: kubernetesVersion: \"1.37.1\"\n" + "cluster: autoscaler: acceptUnknownVersion: true\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			edits := map[string]func(string) string{"zz.cue": func(string) string { return c.cue }}
			if strings.Contains(c.cue, "kubernetesVersion") {
				edits = map[string]func(string) string{"cluster.cue": replace(`kubernetesVersion:    "1.35.2"`, `kubernetesVersion:    "1.37.1"`),
					"zz.cue": func(string) string { return strings.ReplaceAll(c.cue, "cluster: kubernetesVersion: \"1.37.1\"\n", "") }}
			}
			got := findings(t, example(t, edits))
			if c.want == "" {
				if len(got) != 0 {
					t.Errorf("findings %q, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
				t.Fatalf("findings %q, want one starting %q", got, c.want)
			}
		})
	}
}

// Warnings about the tag itself: one the table does not know (and, with
// the on-prem nodes left without providerID, that nodegen cannot tell
// whether it has the fix), a .0 release with newer patches, another minor.
func TestAutoscalerReleaseWarnings(t *testing.T) {
	for _, c := range []struct{ name, cue, want string }{
		{"Unknown", "cluster: autoscaler: version: \"v1.35.3\"\ncluster: onpremProviderID: \"none\"\ncluster: autoscaler: acceptUnknownVersion: true\n",
			"warning: nodegen's table of Cluster Autoscaler releases (newest v1.36.1) does not know cluster.autoscaler.version v1.35.3, so it cannot tell whether it has the fix"},
		{"UnknownWithWorkaround", "cluster: autoscaler: version: \"v1.35.9\"\ncluster: autoscaler: acceptUnknownVersion: true\n",
			"warning: nodegen's table of Cluster Autoscaler releases (newest v1.36.1) does not know cluster.autoscaler.version v1.35.9|"},
		{"DotZero", "cluster: autoscaler: version: \"v1.35.0\"\n",
			"warning: cluster.autoscaler.version v1.35.0 is the first release of its line and misses the fixes of v1.35.1 to v1.35.2; pin v1.35.2"},
		{"OtherMinor", "cluster: autoscaler: version: \"v1.36.1\"\ncluster: autoscaler: acceptUnknownVersion: true\n",
			"warning: cluster.autoscaler.version v1.36.1 is for Kubernetes 1.36, the control plane runs 1.35.2"},
		{"Default", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := example(t, map[string]func(string) string{"zz.cue": func(string) string { return c.cue }})
			l, err := pipeline.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range validate.Warnings(l.Members[0].Source, l.Members[0]) {
				if strings.Contains(f.Msg, "Cluster Autoscaler releases") || strings.Contains(f.Msg, "first release") || strings.Contains(f.Msg, "is for Kubernetes") {
					got = append(got, f.Path+": "+f.Msg+"|"+filepath.Base(f.Pos.Filename()))
				}
			}
			if c.want == "" {
				if len(got) != 0 {
					t.Errorf("warnings %q, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], c.want) || !strings.HasSuffix(got[0], "|zz.cue") ||
				!strings.HasPrefix(got[0], "cluster.autoscaler.version: ") {
				t.Errorf("warnings %q, want one at cluster.autoscaler.version in zz.cue containing %q", got, c.want)
			}
		})
	}
}
