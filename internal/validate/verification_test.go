package validate_test

import (
	"errors"
	"strings"
	"testing"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/validate"
)

// TestVerificationFailuresArePositioned checks that a verification
// failure of a group's artifact is reported at the group's name in the
// source, and that one belonging to no group is left to the caller.
func TestVerificationFailuresArePositioned(t *testing.T) {
	l, err := pipeline.Load(testsrc.Copy(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	m := l.Members[0]
	err = errors.Join(&diag.GroupError{Group: "gpu-t4", Path: "gce/gpu-t4/kube-env", Err: errors.New("the autoscaler would read taints [], want [x]")})
	list := validate.VerificationFailures(err, m)
	if len(list) != 1 {
		t.Fatalf("got %d findings, want 1: %v", len(list), list)
	}
	f := list[0]
	want := m.KeyPos(cue.Str("nodeGroups"), cue.Str("gpu-t4"))
	if !f.Pos.IsValid() || f.Pos != want || !strings.HasSuffix(f.Pos.Filename(), "gpu-t4.cue") {
		t.Errorf("finding at %v, want the group's name at %v", f.Pos, want)
	}
	if !strings.Contains(f.Msg, "gce/gpu-t4/kube-env") || !strings.Contains(f.Msg, "would read taints") {
		t.Errorf("message %q does not say which artifact failed and why", f.Msg)
	}
	mixed := errors.Join(err, errors.New("terraform/main.tf: broken"))
	if list := validate.VerificationFailures(mixed, m); list != nil {
		t.Errorf("a failure outside any group became findings: %v", list)
	}
}
