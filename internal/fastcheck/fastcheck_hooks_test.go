//go:build nodegen_testhooks

package fastcheck_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/outdir"
)

// The tests of the shortcut that need the test hooks of outdir (its
// FailPoint and StampWindow: see internal/testing/testhooks). TestHooked
// runs them in a plain go test.

// TestShortcutFallsBackStamped is TestShortcutFallsBack with every file's
// stamp known, and with a gen interrupted after its swap.
func TestShortcutFallsBackStamped(t *testing.T) {
	interrupted := fallBackCase{"interrupted run", func(tr *tree) {
		// A gen killed after its swap: out/ is whole again, its
		// scratch directory is left next to it.
		p := filepath.Join("out", "gce", "gpu-t4", "kube-env")
		tr.write(p, tr.read(p)+"X: y\n", 0o644)
		outdir.FailPoint = func(stage string) error {
			if stage == "after-swap" {
				return errors.New("killed")
			}
			return nil
		}
		defer func() { outdir.FailPoint = nil }()
		if code, _, errb := tr.run("gen", "--force"); code == cli.ExitOK || !strings.Contains(errb, "killed") {
			tr.t.Fatalf("gen did not fail at its failpoint: exit %d\n%s", code, errb)
		}
	}, "an interrupted run left", cli.ExitOK}
	t.Run(interrupted.name+"/files read", func(t *testing.T) { fallBack(t, interrupted, nil) })
	for _, c := range append(fallBackCases(), interrupted) {
		t.Run(c.name+"/files known by stamp", func(t *testing.T) { fallBack(t, c, stampAll) })
	}
}

// stampAll makes every file's stamp stand for its content at once (no
// racy window), so that a shortcut check records the stamps of all files
// it reads and the next one reads none.
func stampAll(t *testing.T) {
	old := outdir.StampWindow
	outdir.StampWindow = 0
	t.Cleanup(func() { outdir.StampWindow = old })
}

// TestShortcutStamps: a shortcut check reads every file whose stamp it
// does not know, records the stamps of those changed long enough ago, and
// the next check reads only files whose stamp changed.
func TestShortcutStamps(t *testing.T) {
	tr := newTree(t)
	// Every file changed within the racy window (made an hour long, so
	// that a slow machine cannot age the files past it): no stamp can
	// stand for a content, and each check reads everything.
	old := outdir.StampWindow
	outdir.StampWindow = time.Hour
	t.Cleanup(func() { outdir.StampWindow = old })
	for range 2 {
		if ok, note, _ := tr.checkPath(); !ok || !strings.Contains(note, "read 6 of 6 source files") {
			t.Fatalf("fresh files: shortcut %v (%s), want the shortcut reading every file", ok, note)
		}
	}
	stampAll(t)
	if ok, note, _ := tr.checkPath(); !ok || !strings.Contains(note, "read 6 of 6 source files") {
		t.Fatalf("first check: shortcut %v (%s), want the shortcut reading every file", ok, note)
	}
	ok, note, _ := tr.checkPath()
	if !ok || !strings.Contains(note, "read 0 of 6 source files and 0 of ") {
		t.Fatalf("second check: shortcut %v (%s), want the shortcut reading no file", ok, note)
	}
	// Rewriting a file with the same bytes changes its stamp, not its
	// content: the shortcut reads that file alone and still answers.
	p := filepath.Join("out", "gce", "gpu-t4", "kube-env")
	tr.write(p, tr.read(p), 0o644)
	g := filepath.Join("nodegroups", "gpu-t4.cue")
	tr.write(g, tr.read(g), 0o644)
	if ok, note, _ := tr.checkPath(); !ok || !strings.Contains(note, "read 1 of 6 source files and 1 of ") {
		t.Fatalf("after rewriting two files unchanged: shortcut %v (%s), want it to read those two", ok, note)
	}
}
