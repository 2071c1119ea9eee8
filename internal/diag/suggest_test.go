package diag

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"machineType", "machinType", 1},   // deletion
		{"machineType", "machineTypes", 1}, // insertion
		{"machineType", "machineTape", 1},  // substitution
		{"machineType", "mahcineType", 1},  // transposition
		{"machineType", "machinTyp", 2},
		{"kubernetes", "k8s", 8},
		{"", "abc", 3},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	fields := []string{"zones", "machineType", "min", "max", "image", "taints", "startupTaint"}
	for word, want := range map[string]string{
		"machinType":   "machineType",
		"MachineType":  "machineType", // case only
		"zone":         "zones",
		"startupTiant": "startupTaint",
		"mx":           "max",
		"mn":           "min",
		"mi":           "min",
		"mix":          "", // max and min both one edit away: ambiguous
		"machine":      "", // too far
		"zones":        "", // not a slip: the word itself
		"images":       "image",
		"taint":        "taints",
	} {
		if got := Suggest(word, fields); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

func TestPath(t *testing.T) {
	for _, c := range []struct {
		labels []string
		want   string
	}{
		{[]string{"nodeGroups", "gpu-t4", "taints", "0", "key"}, `nodeGroups."gpu-t4".taints.0.key`},
		{[]string{"nodeGroups", `"gpu-t4"`, "labels", "example.com/pool"}, `nodeGroups."gpu-t4".labels."example.com/pool"`},
		{[]string{"cluster", "name"}, "cluster.name"},
	} {
		if got := Path(c.labels...); got != c.want {
			t.Errorf("Path(%q) = %s, want %s", c.labels, got, c.want)
		}
	}
}

func TestSuggestNames(t *testing.T) {
	accelerators := []string{"nvidia-tesla-t4", "nvidia-tesla-t4-vws", "nvidia-tesla-a100", "nvidia-a100-80gb",
		"nvidia-h100-80gb", "nvidia-h100-mega-80gb", "nvidia-l4", "nvidia-l4-vws", "nvidia-b200", "nvidia-gb200"}
	caps := []string{"maxNodesTotal", "cores", "memoryGiB", "gpus"}
	groups := []string{"autoscaler", "cpu-burst", "gpu-t4", "spot-gpu-t4"}
	for _, c := range []struct {
		word  string
		cands []string
		want  string
	}{
		{"nvidia-tesla-t5", accelerators, "nvidia-tesla-t4"},           // a slip, as Suggest
		{"nvidia-t4", accelerators, "nvidia-l4 nvidia-tesla-t4"},       // a word less, or a slip
		{"nvidia-tesla-l4", accelerators, "nvidia-l4 nvidia-tesla-t4"}, // a word more, or a slip
		{"nvidia-h100-mega", accelerators, "nvidia-h100-mega-80gb"},    // a word less
		{"nvidia-h100", accelerators, "nvidia-h100-80gb"},              // the fewest words apart
		{"nvidia-a100", accelerators, "nvidia-a100-80gb nvidia-tesla-a100"},
		{"nvidia", accelerators, ""},          // too many fit
		{"nvidia-tesla-t4", accelerators, ""}, // a candidate itself
		{"nvidia-rtx-6000", accelerators, ""}, // nothing holds the other's words
		{"maxNodes", caps, "maxNodesTotal"},   // camelCase words
		{"memory", caps, "memoryGiB"},
		{"totalNodes", caps, "maxNodesTotal"},
		{"autoscaler-nodes", groups, "autoscaler"},
		{"gpu", groups, "gpu-t4"},
		{"t4-gpu", groups, "gpu-t4"}, // the same words in another order
	} {
		got := strings.Join(SuggestNames(c.word, c.cands), " ")
		if got != c.want {
			t.Errorf("SuggestNames(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	if got := QuotedOrList([]string{"a", "b", "c"}); got != `"a", "b" or "c"` {
		t.Errorf("QuotedOrList = %s", got)
	}
}
