package outdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nodegen/nodegen/internal/par"
)

// Seen is what Intact found in an output directory that held exactly what
// its record lists: the record's digest, how many files it lists, and a
// Stamp and sha256 of each file whose stamp can stand for its content.
// Given to the next Intact, it spares reading those files again.
type Seen struct {
	Manifest string
	Count    int
	Files    map[string]Seen1
	// Read is how many files Intact read (the others it knew by stamp).
	Read int
}

// Seen1 is one file's stamp and the sha256 (hex) of its content.
type Seen1 struct{ Stamp, SHA256 string }

// Intact reports whether dir holds exactly what its record lists: every
// recorded file with the recorded sha256 and mode, no other file, link
// or special entry (empty directories aside), and no leftover of an
// interrupted run. When it does, it returns what it saw (reason ""),
// otherwise why not. prev, if not nil, is what an earlier Intact saw: a
// file whose Stamp is unchanged is taken to hold what it held then
// instead of being read (when the record is the same, its content is
// then known to match it). It reads under the same shared lock as
// CompareWith and never renders anything: it is the half of `check`'s
// shortcut that looks at the output directory.
func Intact(dir string, o Options, prev *Seen) (seen *Seen, reason string, err error) {
	now := time.Now()
	dir = filepath.Clean(dir)
	unlock, err := lock(filepath.Dir(dir), false, o)
	switch {
	case err == nil:
		defer unlock()
	case errors.Is(err, fs.ErrNotExist):
		return nil, dir + " does not exist", nil
	default:
		return nil, "", err
	}
	if own, err := ownScratches(dir); err != nil {
		return nil, "", err
	} else if len(own) > 0 {
		return nil, "an interrupted run left " + own[0].root, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, "no readable " + ManifestName + ": " + err.Error(), nil
	}
	seen = &Seen{Manifest: ManifestDigest(b), Files: map[string]Seen1{}}
	if prev != nil && prev.Manifest != seen.Manifest {
		prev = nil // another record: what was seen is no evidence
	}

	files, known, err := recordedTree(dir, prev, now)
	if err != nil {
		return nil, err.Error(), nil
	}
	if prev != nil && known == len(files) && len(files) == prev.Count {
		// Every file is one seen before, unchanged, under the same
		// record; they were as many as the record lists, so none is
		// missing.
		seen.Count, seen.Files = prev.Count, prev.Files
		return seen, "", nil
	}
	if reason := seen.check(files, b, prev, now); reason != "" {
		return nil, reason, nil
	}
	return seen, "", nil
}

// stampedFile is a file of an output directory: its path relative to
// the directory, its path, what lstat said, and its Stamp ("" when it
// cannot stand for the content).
type stampedFile struct {
	rel, path string
	info      fs.FileInfo
	stamp     string
}

// recordedTree lists the files of dir but its record, with their stamps
// at now, and counts those whose stamp is prev's. A file that is not a
// regular one is an error.
func recordedTree(dir string, prev *Seen, now time.Time) (files []stampedFile, known int, err error) {
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
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", rel)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := stampedFile{rel: rel, path: path, info: info}
		f.stamp, _ = Stamp(info, now)
		if p, ok := prev.file(rel); ok && f.stamp != "" && p.Stamp == f.stamp {
			known++
		}
		files = append(files, f)
		return nil
	})
	return files, known, err
}

// check compares files with the record b (prev, if not nil, is what an
// earlier Intact saw under the same record): every file recorded, with
// its mode, none missing, each with its recorded sha256, read unless its
// stamp is prev's. It fills seen's count, the files read and the stamps
// that stand for a content, and says why the tree is not what b records
// ("" when it is).
func (seen *Seen) check(files []stampedFile, b []byte, prev *Seen, now time.Time) string {
	m, err := parseManifest(ManifestName, b)
	if err != nil {
		return err.Error()
	}
	seen.Count = len(m.Files)
	recorded := m.entries()
	sums := make([]string, len(files))
	stamps := make([]string, len(files))
	var read []int
	for i, f := range files {
		e, ok := recorded[f.rel]
		if !ok {
			return f.rel + " is not in the record"
		}
		if rec, err := parseMode(e.Mode); err != nil || !sameMode(f.info.Mode(), rec) {
			return fmt.Sprintf("%s has mode %s, recorded %s", f.rel, modeString(f.info.Mode()), e.Mode)
		}
		if p, ok := prev.file(f.rel); ok && f.stamp != "" && p.Stamp == f.stamp {
			sums[i], stamps[i] = p.SHA256, f.stamp
			continue
		}
		read = append(read, i)
	}
	if len(files) != len(recorded) {
		return fmt.Sprintf("%d of the %d recorded files are missing", len(recorded)-len(files), len(recorded))
	}
	seen.Read = len(read)
	problems := make([]string, len(files))
	par.Do(len(read), func(j int) {
		i := read[j]
		sums[i], stamps[i], problems[i] = readStamped(files[i].path, files[i].stamp, now)
	})
	for i, f := range files {
		switch {
		case problems[i] != "":
			return problems[i]
		case sums[i] != recorded[f.rel].SHA256:
			return f.rel + " differs from the record"
		}
		if stamps[i] != "" {
			seen.Files[f.rel] = Seen1{Stamp: stamps[i], SHA256: sums[i]}
		}
	}
	return ""
}

func (s *Seen) file(rel string) (Seen1, bool) {
	if s == nil {
		return Seen1{}, false
	}
	f, ok := s.Files[rel]
	return f, ok
}

// readStamped reads and hashes the file at path, whose lstat gave stamp
// ("" for none). The stamp is kept only if the open file still has it
// after the read: then the hash is of the content the stamp describes.
func readStamped(path, stamp string, now time.Time) (sum, kept, problem string) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err.Error()
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return "", "", err.Error()
	}
	if stamp != "" {
		if info, err := f.Stat(); err == nil {
			if after, ok := Stamp(info, now); ok && after == stamp {
				kept = stamp
			}
		}
	}
	return hashOf(b), kept, ""
}

// ManifestDigest identifies the bytes of a record.
func ManifestDigest(b []byte) string { return "sha256:" + hashOf(b) }
