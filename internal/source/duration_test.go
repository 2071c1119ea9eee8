package source_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// Durations are decoded into the model once, when the source is loaded:
// each keeps its length and the text it was written as.
func TestDurationsDecoded(t *testing.T) {
	l, err := source.Load(testsrc.Dir())
	if err != nil {
		t.Fatal(err)
	}
	src := l.Fleet.Clusters[0]
	for _, c := range []struct {
		what string
		got  interface {
			Duration() time.Duration
			String() string
		}
		want time.Duration
		text string
	}{
		{"cluster's maxNodeProvisionTime", src.Cluster.Autoscaler.MaxNodeProvisionTime, 15 * time.Minute, "15m"},
		{"gpu-t4's maxNodeProvisionTime", src.NodeGroups["gpu-t4"].Autoscaling.MaxNodeProvisionTime, 20 * time.Minute, "20m"},
		{"joinToken.ttl (the schema's default)", src.Cluster.JoinToken.TTL, 24 * time.Hour, "24h"},
	} {
		if c.got.Duration() != c.want || c.got.String() != c.text {
			t.Errorf("%s: %v written %q, want %v written %q", c.what, c.got.Duration(), c.got.String(), c.want, c.text)
		}
	}
}

// A duration the schema's pattern admits but that does not fit in a
// time.Duration is reported where it is written, once, when the source is
// decoded.
func TestDurationOutOfRangePositioned(t *testing.T) {
	dir := testsrc.Copy(t, nil)
	file := filepath.Join(dir, "gpu-t4.cue")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), `maxNodeProvisionTime:  "20m"`, `maxNodeProvisionTime:  "9999999999h"`, 1)
	if bad == string(b) {
		t.Fatal("the test source's gpu-t4 has no maxNodeProvisionTime 20m to change")
	}
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := source.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Findings) != 1 {
		t.Fatalf("%d findings, want 1: %v", len(l.Findings), l.Findings)
	}
	f := l.Findings[0]
	pos := f.Pos.Position()
	if filepath.Base(pos.Filename) != "gpu-t4.cue" || pos.Line != 20 || pos.Column != 26 ||
		f.Path != `nodeGroups."gpu-t4".autoscaling.maxNodeProvisionTime` ||
		f.Msg != `"9999999999h" is not a duration: time: invalid duration "9999999999h"` {
		t.Errorf("finding %s:%d:%d: %s: %s; want gpu-t4.cue:20:26: nodeGroups.\"gpu-t4\".autoscaling.maxNodeProvisionTime: \"9999999999h\" is not a duration: time: invalid duration \"9999999999h\"",
			filepath.Base(pos.Filename), pos.Line, pos.Column, f.Path, f.Msg)
	}
}
