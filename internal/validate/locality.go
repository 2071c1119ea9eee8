package validate

import (
	"strings"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodegen/nodegen/internal/model"
)

// locality checks an on-prem group's region and zone: label values, since
// they become its nodes' topology labels.
func (c *checker) locality(g *model.NodeGroup, base []cue.Selector) {
	if g.Locality == nil {
		return
	}
	for _, f := range []struct{ field, label, value string }{
		{"region", model.RegionLabel, g.Locality.Region},
		{"zone", model.ZoneLabel, g.Locality.Zone},
	} {
		if msgs := validation.IsValidLabelValue(f.value); len(msgs) > 0 {
			c.at(join(base, "locality", f.field), "%s %q is the value of the label %s on the group's nodes and is not a valid label value: %s", f.field, f.value, f.label, strings.Join(msgs, "; "))
		}
	}
}
