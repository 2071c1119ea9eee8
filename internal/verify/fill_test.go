package verify

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// TestFillJoinIsDecodeOfFilled holds fillJoin to what it stands for: for
// every cloud group of the tests' example and each of its zones, the
// decoded template with the values put in equals the strict decode of the
// document with the values put into its text, as the script does on a VM.
// The template itself is left as it was.
func TestFillJoinIsDecodeOfFilled(t *testing.T) {
	src, files := testsrc.Example(t)
	n := 0
	for _, g := range src.CloudGroups() {
		doc, err := JoinTemplateOf(files[layout.StartupScriptPath(g.Name)])
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := kubeadm.DecodeJoinConfiguration(doc)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := kubeadm.DecodeJoinConfiguration(doc)
		instance := src.Cluster.BaseInstanceName(g) + sampleInstanceSuffix
		for _, zone := range g.Zones {
			got, err := fillJoin(tmpl, instance, zone)
			if err != nil {
				t.Fatal(err)
			}
			filled := doc
			for p, v := range map[string]string{model.InstancePlaceholder: instance, model.ZonePlaceholder: zone, model.TokenPlaceholder: sampleToken} {
				filled = bytes.ReplaceAll(filled, []byte(p), []byte(v))
			}
			want, err := kubeadm.DecodeJoinConfiguration(filled)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("group %s, zone %s: fillJoin gives\n%+v\ndecoding the filled document gives\n%+v", g.Name, zone, got, want)
			}
			if name := got.NodeRegistration.Name; name != instance {
				t.Errorf("group %s: node name %q, want %q", g.Name, name, instance)
			}
			n++
		}
		if !reflect.DeepEqual(tmpl, before) {
			t.Errorf("group %s: fillJoin changed the template", g.Name)
		}
	}
	if n < 2 {
		t.Fatalf("only %d zones compared", n)
	}
}

// A value that could change a scalar's meaning is not put in.
func TestFillJoinRefusesUnsafeValues(t *testing.T) {
	tmpl := &kubeadm.JoinConfiguration{NodeRegistration: kubeadm.NodeRegistrationOptions{Name: model.InstancePlaceholder}}
	for _, v := range []string{"a b", "x: y", `a"b`, "a#b", ""} {
		if _, err := fillJoin(tmpl, v, "us-central1-a"); err == nil || !strings.Contains(err.Error(), "cannot stand for a placeholder") {
			t.Errorf("instance %q: %v, want a refusal", v, err)
		}
	}
}
