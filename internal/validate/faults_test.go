package validate_test

import (
	"strings"
	"testing"
)

func appendLine(line string) func(string) string {
	return func(s string) string { return s + line + "\n" }
}

// TestAutoscalerZones: the autoscaler's group in one zone is refused at its
// zones unless cluster.autoscaler.singleZone says so, and singleZone on a
// group of two zones is refused at singleZone.
func TestAutoscalerZones(t *testing.T) {
	oneZone := replace(`zones: ["us-central1-a", "us-central1-b"]`, `zones: ["us-central1-a"]`)
	cases := []struct {
		name  string
		edits map[string]func(string) string
		want  []string
	}{
		{"one zone", map[string]func(string) string{"autoscaler.cue": oneZone}, []string{
			`nodegroups/autoscaler.cue:6:9: nodeGroups.autoscaler.zones: the autoscaler's node group "autoscaler" has one zone: a zone outage stops all scaling; give it two zones or more (one node and one autoscaler replica in each), or set cluster.autoscaler.singleZone: true to accept that`,
		}},
		{"one zone on purpose", map[string]func(string) string{"autoscaler.cue": oneZone,
			"cluster.cue": appendLine("cluster: autoscaler: singleZone: true")}, nil},
		{"singleZone with two zones", map[string]func(string) string{
			"cluster.cue": appendLine("cluster: autoscaler: singleZone: true")}, []string{
			`nodegroups/cluster.cue:25:34: cluster.autoscaler.singleZone: the autoscaler's node group "autoscaler" has 2 zones: singleZone: true says it has one; remove it`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := findings(t, example(t, c.edits))
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestSpotFallbackBound: a preferred Spot group (spot-gpu-t4: priority 15
// above gpu-t4's 10, three zones, maxNodeProvisionTime 20m, so up to 1h)
// is refused at its spot field when the source's bound is below its worst
// case; either knob (a shorter maxNodeProvisionTime, fewer zones) brings it
// within the bound.
func TestSpotFallbackBound(t *testing.T) {
	bound := func(d string) func(string) string {
		return func(s string) string {
			s = strings.Replace(s, `expander:                         "least-waste"`, `expander:                         "priority,least-waste"`, 1)
			if d == "" {
				return s
			}
			return appendLine(`cluster: autoscaler: maxSpotFallbackDelay: "` + d + `"`)(s)
		}
	}
	// The priority expander prefers spot-gpu-t4 to gpu-t4.
	prefer := func(edits map[string]func(string) string) map[string]func(string) string {
		spot := replace("spot:           true", "spot:           true, priority: 15")
		if e, ok := edits["spot-gpu-t4.cue"]; ok {
			edits["spot-gpu-t4.cue"] = func(s string) string { return spot(e(s)) }
		} else {
			edits["spot-gpu-t4.cue"] = spot
		}
		edits["gpu-t4.cue"] = replace("\tmax:", "\tpriority: 10, max:")
		return edits
	}
	over := `nodegroups/spot-gpu-t4.cue:11:18: nodeGroups."spot-gpu-t4".spot: Spot group "spot-gpu-t4" may make a scale-up wait 1h0m0s before the autoscaler falls back to a lower priority group (3 zones × maxNodeProvisionTime 20m0s, when Spot VMs never arrive and GCE reports no error), over cluster.autoscaler.maxSpotFallbackDelay 45m0s: lower the group's autoscaling.maxNodeProvisionTime to 15m0s or less, or give it fewer zones`
	cases := []struct {
		name  string
		edits map[string]func(string) string
		want  []string
	}{
		{"no bound", map[string]func(string) string{"cluster.cue": bound("")}, nil},
		{"within the bound", map[string]func(string) string{"cluster.cue": bound("1h")}, nil},
		{"over the bound", map[string]func(string) string{"cluster.cue": bound("45m")}, []string{over}},
		{"shorter provision time", map[string]func(string) string{"cluster.cue": bound("45m"),
			"spot-gpu-t4.cue": replace(`maxNodeProvisionTime:  "20m"`, `maxNodeProvisionTime:  "15m"`)}, nil},
		{"fewer zones", map[string]func(string) string{"cluster.cue": bound("45m"),
			"spot-gpu-t4.cue": replace(`"us-central1-c"`, ``)}, nil},
		{"not a positive duration", map[string]func(string) string{"cluster.cue": bound("0s")}, []string{
			`nodegroups/cluster.cue:25:44: cluster.autoscaler.maxSpotFallbackDelay: "0s" is not a positive duration`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := findings(t, example(t, prefer(c.edits)))
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
	// Without the priority expander no group is preferred: the bound
	// bounds nothing, and is refused as a setting without effect.
	got := findings(t, example(t, map[string]func(string) string{"cluster.cue": appendLine(`cluster: autoscaler: maxSpotFallbackDelay: "45m"`)}))
	if len(got) != 1 || !strings.Contains(got[0], "cluster.autoscaler.maxSpotFallbackDelay: maxSpotFallbackDelay has no effect: no Spot group is preferred by the priority expander") {
		t.Errorf("findings without the priority expander: %v", got)
	}
}
