package render_test

import (
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestSourceSpecDefaults makes sure the default test source is valid and
// that every field of testsrc.Spec reaches the rendered output, so tests that
// vary one field vary something real.
func TestSourceSpecDefaults(t *testing.T) {
	_, base := testsrc.Spec{}.MustRender(t)
	marker := "zz-marker-9"
	for name, spec := range map[string]testsrc.Spec{
		"GPUDescription":    {GPUDescription: marker},
		"StaticDescription": {StaticDescription: marker},
		"OnPremDescription": {OnPremDescription: marker},
		"Image":             {Image: "projects/acme-images/global/images/" + marker},
		"TaintRemoverImage": {TaintRemoverImage: "example.com/" + marker + ":1"},
		"LabelValue":        {LabelValue: marker},
		"TaintValue":        {TaintValue: marker},
		"Secret":            {Secret: marker},
		"MetadataKey":       {MetadataKey: marker},
	} {
		_, files := spec.MustRender(t)
		found := false
		for p, b := range files {
			if strings.Contains(string(b), marker) && !strings.Contains(string(base[p]), marker) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: the value appears in no rendered file", name)
		}
	}
}
