package gce

import (
	"maps"
	"regexp"
	"strings"
	"testing"
)

// labelKeyRE and labelValueRE are the forms of a GCE label's key and
// value (Compute Engine documentation, "Requirements for labels").
var (
	labelKeyRE   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	labelValueRE = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

func TestLabels(t *testing.T) {
	labels := map[string]string{
		"example.com/pool":                       "GPU.Burst",
		"example_com/pool":                       "collides",
		"1st.example.com/tier":                   "a",
		"nodegen-cluster":                        "not-mine",
		"example.com/" + strings.Repeat("x", 63): strings.Repeat("V", 63),
	}
	got := Labels("hybrid-ai", "gpu", labels)
	want := map[string]string{
		"nodegen-cluster":                               "hybrid-ai",
		"nodegen-node-group":                            "gpu",
		"example_com_pool":                              "gpu_burst",
		"k1st_example_com_tier":                         "a",
		("example_com_" + strings.Repeat("x", 63))[:63]: strings.Repeat("v", 63),
	}
	if !maps.Equal(got, want) {
		t.Errorf("Labels = %v\nwant %v", got, want)
	}
	for k, v := range got {
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) {
			t.Errorf("%s=%s is not a valid GCE label", k, v)
		}
	}
}

// FuzzLabel checks that any Kubernetes label becomes a valid GCE label.
func FuzzLabel(f *testing.F) {
	for _, s := range []string{"example.com/pool", "", "A", "9", "ünïcode/ß", "a_b-c.d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k := labelKey(s); !labelKeyRE.MatchString(k) {
			t.Errorf("labelKey(%q) = %q", s, k)
		}
		if v := LabelValue(s); !labelValueRE.MatchString(v) {
			t.Errorf("LabelValue(%q) = %q", s, v)
		}
	})
}
