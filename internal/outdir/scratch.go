package outdir

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A scratch directory is where one WriteWith builds the new tree and puts the
// old one after the swap: a hidden directory next to the output directory,
// named ".<out>.nodegen-<random>" so that it never takes the place of
// anything already there. WriteWith makes it with its mark file first and
// removes it last. A run that was killed leaves it behind, and the next run
// knows it by its mark, never by its name: a directory of that shape
// without the mark is someone else's and is left alone.
type scratch struct{ root string }

// markName is the file that marks a scratch directory as nodegen's.
const markName = "nodegen-scratch"

// staging is where the new tree is built.
func (s scratch) staging() string { return filepath.Join(s.root, "new") }

// retired is where the old tree is put by the swap.
func (s scratch) retired() string { return filepath.Join(s.root, "old") }

// markContent is what the mark of dir's scratch directories says. It names
// dir, so a scratch directory of another output directory in the same
// parent is not taken for one of dir's.
func markContent(dir string) []byte {
	return []byte("nodegen scratch directory of " + strconv.Quote(filepath.Base(dir)) +
		"\nnodegen made it while writing that directory and removes it on its next run.\n")
}

func scratchPrefix(dir string) string { return "." + filepath.Base(dir) + ".nodegen-" }

// newScratch makes a scratch directory for dir, mark first.
func newScratch(dir string) (scratch, error) {
	root, err := os.MkdirTemp(filepath.Dir(dir), scratchPrefix(dir)+"*")
	if err != nil {
		return scratch{}, err
	}
	s := scratch{root: root}
	if err := writeFile(filepath.Join(root, markName), markContent(dir), 0o644); err != nil {
		os.RemoveAll(root)
		return scratch{}, err
	}
	return s, nil
}

// ownScratches lists the scratch directories of dir that earlier runs
// left: directories next to dir whose name has the scratch shape and which
// hold dir's mark as a regular file. Nothing else is returned, whatever its
// name.
func ownScratches(dir string) ([]scratch, error) {
	parent := filepath.Dir(dir)
	entries, err := os.ReadDir(parent)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	want := markContent(dir)
	var out []scratch
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), scratchPrefix(dir)) {
			continue // ReadDir does not follow links: a link is no scratch
		}
		root := filepath.Join(parent, e.Name())
		fi, err := os.Lstat(filepath.Join(root, markName))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(want)) {
			continue
		}
		got, err := os.ReadFile(filepath.Join(root, markName))
		if err != nil || !bytes.Equal(got, want) {
			continue
		}
		out = append(out, scratch{root: root})
	}
	return out, nil
}

// interrupted returns the scratch directory that holds dir's tree after a
// two-rename swap that died between its renames: dir is missing and the
// old tree is in the scratch directory.
func interrupted(dir string) (scratch, bool) {
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return scratch{}, false
	}
	own, err := ownScratches(dir)
	if err != nil {
		return scratch{}, false
	}
	for _, s := range own {
		if fi, err := os.Lstat(s.retired()); err == nil && fi.IsDir() {
			return s, true
		}
	}
	return scratch{}, false
}

// cleanScratches undoes what killed runs left: it moves an old tree that
// an interrupted swap left in a scratch directory back to dir, then removes
// every scratch directory of dir.
func cleanScratches(dir string) error {
	if s, ok := interrupted(dir); ok {
		if err := os.Rename(s.retired(), dir); err != nil {
			return errors.New("restoring " + dir + " from " + s.retired() + ", left by an interrupted run: " + err.Error())
		}
	}
	own, err := ownScratches(dir)
	if err != nil {
		return err
	}
	for _, s := range own {
		if err := os.RemoveAll(s.root); err != nil {
			return errors.New("removing leftovers of an interrupted run: " + err.Error())
		}
	}
	return nil
}
