package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nodegen/nodegen/internal/par"
)

// Intact reports whether dir holds exactly what its record lists: every
// recorded file with the recorded sha256 and mode, no other file, link
// or special entry (empty directories aside), and no leftover of an
// interrupted run. It returns the digest of the record (ManifestDigest's
// form) when it does, and otherwise why not. It reads under the same
// shared lock as Compare and never renders anything: it is the half of
// `check`'s shortcut that looks at the output directory.
func Intact(dir string, o Options) (digest, reason string, err error) {
	dir = filepath.Clean(dir)
	unlock, err := lock(filepath.Dir(dir), false, o)
	switch {
	case err == nil:
		defer unlock()
	case errors.Is(err, fs.ErrNotExist):
		return "", dir + " does not exist", nil
	default:
		return "", "", err
	}
	for _, what := range []string{"new", "old"} {
		if _, err := os.Lstat(sibling(dir, what)); !errors.Is(err, fs.ErrNotExist) {
			return "", "an interrupted run left " + sibling(dir, what), nil
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return "", "no readable " + ManifestName + ": " + err.Error(), nil
	}
	m, err := parseManifest(ManifestName, b)
	if err != nil {
		return "", err.Error(), nil
	}
	recorded := m.entries()
	var paths []string
	var entries []manifestEntry
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ManifestName {
			return nil
		}
		e, ok := recorded[rel]
		switch {
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", rel)
		case !ok:
			return fmt.Errorf("%s is not in the record", rel)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if got := modeString(info.Mode()); got != e.Mode {
			return fmt.Errorf("%s has mode %s, recorded %s", rel, got, e.Mode)
		}
		paths = append(paths, path)
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return "", err.Error(), nil
	}
	if len(entries) != len(recorded) {
		return "", fmt.Sprintf("%d of the %d recorded files are missing", len(recorded)-len(entries), len(recorded)), nil
	}
	problems := make([]string, len(paths))
	par.Do(len(paths), func(i int) {
		b, err := os.ReadFile(paths[i])
		switch {
		case err != nil:
			problems[i] = err.Error()
		case hashOf(b) != entries[i].SHA256:
			problems[i] = entries[i].Path + " differs from the record"
		}
	})
	for _, p := range problems {
		if p != "" {
			return "", p, nil
		}
	}
	return ManifestDigest(b), "", nil
}

// ManifestDigest identifies the bytes of a record.
func ManifestDigest(b []byte) string { return "sha256:" + hashOf(b) }
