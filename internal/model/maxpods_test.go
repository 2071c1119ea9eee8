package model_test

import (
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/schema"
)

// The schema's maxPods default is the model's: a group with a kubelet
// block and one without get the same maxPods.
func TestSchemaMaxPodsDefault(t *testing.T) {
	v := cuecontext.New().CompileBytes(schema.Source, cue.Filename(schema.Filename))
	if err := v.Err(); err != nil {
		t.Fatal(err)
	}
	d, ok := v.LookupPath(cue.ParsePath("#Kubelet.maxPods")).Default()
	if !ok {
		t.Fatal("#Kubelet.maxPods has no default")
	}
	got, err := d.Int64()
	if err != nil {
		t.Fatal(err)
	}
	if got != model.DefaultMaxPods {
		t.Errorf("the schema defaults maxPods to %d, the model to %d", got, model.DefaultMaxPods)
	}
	if n := (&model.NodeGroup{}).MaxPods(); n != model.DefaultMaxPods {
		t.Errorf("a group without a kubelet block has maxPods %d", n)
	}
	if n := (&model.NodeGroup{Kubelet: &model.Kubelet{MaxPods: 64}}).MaxPods(); n != 64 {
		t.Errorf("a group with maxPods 64 has %d", n)
	}
}
