package source_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// copyExample copies the shipped example into a temporary directory and
// appends extra to one of its files.
func copyExample(t *testing.T, file, extra string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(testsrc.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(testsrc.Dir(), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == file {
			b = append(b, extra...)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The optional capacity override of a cloud group decodes into the model.
func TestCapacityOverride(t *testing.T) {
	dir := copyExample(t, "cpu-burst.cue", `nodeGroups: "cpu-burst": capacity: {cpu: 4, memory: "15Gi"}`+"\n")
	l, err := source.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := l.Fleet.Clusters[0].NodeGroups["cpu-burst"].Capacity
	if got == nil || *got != (model.Capacity{CPU: 4, Memory: "15Gi"}) {
		t.Errorf("capacity = %+v", got)
	}
	if c := l.Fleet.Clusters[0].NodeGroups["gpu-t4"].Capacity; c != nil {
		t.Errorf("gpu-t4 has capacity %+v without declaring one", c)
	}
}

func TestCapacityOverrideInvalid(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{`{cpu: 4, memory: "15GB"}`, `cpu-burst.cue:16:53: nodeGroups."cpu-burst".capacity.memory: invalid value "15GB"`},
		{`{cpu: 0, memory: "15Gi"}`, `cpu-burst.cue:16:42: nodeGroups."cpu-burst".capacity.cpu: invalid value 0`},
		{`{memory: "15Gi"}`, "capacity.cpu"},
	} {
		dir := copyExample(t, "cpu-burst.cue", `nodeGroups: "cpu-burst": capacity: `+c.value+"\n")
		_, err := source.Load(dir)
		if err == nil || !errors.As(err, new(diag.List)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("capacity %s: error %v, want a finding containing %q", c.value, err, c.want)
		}
	}
}
