package diag

import "testing"

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
