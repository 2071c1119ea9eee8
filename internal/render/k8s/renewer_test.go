package k8s

import (
	"bytes"
	"slices"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/templates"
)

// The renewer's script, as it ships, takes nothing from its environment
// but what its CronJob sets: no variable with a default the environment
// could override (an endpoint for tests), so every node runs the script
// against the production endpoints.
func TestRenewerScriptHasNoOverrides(t *testing.T) {
	script, err := templates.FS.ReadFile("join-token-renewer.sh")
	if err != nil {
		t.Fatal(err)
	}
	f, err := syntax.NewParser().Parse(bytes.NewReader(script), "join-token-renewer.sh")
	if err != nil {
		t.Fatal(err)
	}
	src := &model.Source{Cluster: model.Cluster{JoinToken: model.JoinToken{SecretManager: &model.SecretRef{Secret: "s"}}}}
	set := []string{"HOME"}
	for _, v := range joinTokenRenewerEnv(src, model.Renewal{}) {
		set = append(set, v.Name)
	}
	var overrides []string
	syntax.Walk(f, func(n syntax.Node) bool {
		if p, ok := n.(*syntax.ParamExp); ok && p.Exp != nil && !slices.Contains(set, p.Param.Value) &&
			(p.Exp.Op == syntax.DefaultUnset || p.Exp.Op == syntax.DefaultUnsetOrNull) {
			overrides = append(overrides, p.Param.Value)
		}
		return true
	})
	if len(overrides) > 0 {
		t.Errorf("the renewer's script takes %q from its environment, which its CronJob does not set", overrides)
	}
}
