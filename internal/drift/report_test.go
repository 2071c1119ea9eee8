package drift_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/drift"
	"github.com/nodegen/nodegen/internal/nodecheck"
)

// TestSummaryPlural: the summary line counts in English: "1 of 1 node
// differs", "0 of 1 node", "2 of 3 nodes differ", "1 of 1 instance template".
func TestSummaryPlural(t *testing.T) {
	drifted := nodecheck.NodeResult{Name: "a", Group: "g", Findings: []nodecheck.Finding{{Kind: nodecheck.LabelMissing, Message: "label x missing"}}}
	clean := nodecheck.NodeResult{Name: "b", Group: "g"}
	for _, tc := range []struct {
		nodes     []nodecheck.NodeResult
		templates []drift.TemplateResult
		want      string
	}{
		{[]nodecheck.NodeResult{drifted}, nil, "drift: 1 of 1 node differs from the source"},
		{[]nodecheck.NodeResult{clean}, nil, "no drift: 0 of 1 node differ from the source"},
		{[]nodecheck.NodeResult{drifted, drifted, clean}, nil, "drift: 2 of 3 nodes differ from the source"},
		{[]nodecheck.NodeResult{drifted, clean}, nil, "drift: 1 of 2 nodes differs from the source"},
		{nil, []drift.TemplateResult{{Name: "t"}}, "no drift: 0 of 1 instance template differ from the source"},
		{[]nodecheck.NodeResult{drifted}, []drift.TemplateResult{{Name: "t"}}, "drift: 1 of 1 node, 0 of 1 instance template differ from the source"},
	} {
		var b bytes.Buffer
		if err := drift.WriteText(&b, drift.NewReport(tc.nodes, nil, tc.templates)); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if got := lines[len(lines)-1]; got != tc.want {
			t.Errorf("summary %q, want %q", got, tc.want)
		}
	}
}
