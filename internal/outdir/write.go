package outdir

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/par"
)

// WriteWith makes dir hold exactly files, the record of them
// (ManifestName), and the foreign files it already has. It holds an
// exclusive lock on dir's parent while it works, so two runs cannot
// interleave. When a file it would replace or delete is not (or no longer)
// nodegen's, it returns a *ConflictError and writes nothing. When nothing
// changed it touches nothing. Otherwise it builds the complete new tree
// next to dir (unchanged and foreign files hard-linked, so their mtimes
// stay; directories keep their modes), swaps the two trees in one atomic
// rename, carries over into the new tree what other processes wrote into
// the old one meanwhile, and removes the old one. Leftovers of an
// interrupted run (scratch directories with nodegen's mark) are removed
// first; nothing else next to dir is touched.
func WriteWith(dir string, files layout.Files, o Options) (Report, error) {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Report{}, err
	}
	unlock, err := lock(parent, true, o)
	if err != nil {
		return Report{}, err
	}
	defer unlock()

	if err := cleanScratches(dir); err != nil {
		return Report{}, err
	}

	r, old, err := compareTree(dir, files, o.Force, o.Scope)
	if err != nil {
		return r, err
	}
	if len(r.Conflicts) > 0 {
		return r, &ConflictError{Conflicts: r.Conflicts}
	}
	if r.Clean() {
		return r, nil
	}
	s, err := newScratch(dir)
	if err != nil {
		return r, err
	}
	staging, retired := s.staging(), s.retired()
	if err := buildTree(dir, staging, files, r, old); err != nil {
		os.RemoveAll(s.root)
		return r, err
	}
	if err := failAt("before-swap"); err != nil {
		return r, err
	}
	if err := swap(staging, dir, retired); err != nil {
		if _, lost := interrupted(dir); !lost {
			os.RemoveAll(s.root)
		}
		return r, err
	}
	if err := failAt("after-swap"); err != nil {
		return r, err
	}
	if err := carryOver(retired, dir, files, old, &r); err != nil {
		return r, fmt.Errorf("carrying over files written into %s during the run (the old tree is kept at %s): %w", dir, retired, err)
	}
	if err := syncDir(parent); err != nil {
		return r, err
	}
	if r.Manifest != nil {
		r.ManifestDigest = ManifestDigest(r.Manifest.New)
	}
	return r, os.RemoveAll(s.root)
}

// buildTree creates the new tree at staging: the rendered files, their
// record, and everything of the old tree that is not nodegen's (foreign
// files, links, empty directories), with every directory that existed
// keeping its mode. It creates the files in parallel and makes the tree
// durable with one syncfs rather than an fsync per file.
func buildTree(dir, staging string, files layout.Files, r Report, old *tree) error {
	rewrite := map[string]bool{}
	for _, c := range r.Changes {
		rewrite[c.Path] = c.Kind != Removed
	}
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return err
	}
	keep := append(append(files.Paths(), r.Foreign...), r.Outside...)
	if r.Manifest != nil || old.manifest != nil {
		keep = append(keep, ManifestName)
	}
	errs := make([]error, len(keep))
	par.Do(len(keep), func(i int) {
		p := keep[i]
		dst := filepath.Join(staging, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			errs[i] = err
			return
		}
		src := filepath.Join(dir, filepath.FromSlash(p))
		switch {
		case p == ManifestName && r.Manifest != nil:
			errs[i] = writeFile(dst, r.Manifest.New, 0o644)
		case rewrite[p]:
			errs[i] = writeFile(dst, files[p], mode(p))
		default:
			err := os.Link(src, dst)
			if errors.Is(err, fs.ErrNotExist) {
				// A foreign file deleted since the scan: gone.
				err = nil
			}
			if err != nil {
				errs[i] = fmt.Errorf("keeping %s: %w", src, err)
			}
		}
		if i == len(keep)/2 && errs[i] == nil {
			errs[i] = failAt("mid-tree")
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, p := range mapsKeys(old.emptyDirs) {
		if err := os.MkdirAll(filepath.Join(staging, filepath.FromSlash(p)), 0o755); err != nil {
			return err
		}
	}
	if err := keepDirModes(staging, old.dirs); err != nil {
		return err
	}
	return syncFS(staging)
}

// keepDirModes gives every directory below (and including) root that
// existed in the old tree its old mode, the deepest first.
func keepDirModes(root string, modes map[string]fs.FileMode) error {
	dirs := mapsKeys(modes)
	slices.SortFunc(dirs, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(b, "/"), strings.Count(a, "/")), strings.Compare(a, b))
	})
	for _, d := range dirs {
		p := filepath.Join(root, filepath.FromSlash(d))
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue // held only files nodegen removed
		}
		if err := os.Chmod(p, modes[d]); err != nil {
			return err
		}
	}
	return nil
}

func mapsKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// carryOver moves into the new tree at dir what another process created
// or replaced in the old tree (now at retired) after scan read it: the
// swap would otherwise lose it. Entries scan saw (the same file, by
// device and inode) are already in the new tree (hard-linked) or were
// nodegen's. A file written at a path nodegen generates is carried to that
// path plus ".nodegen-concurrent", next to the generated file.
func carryOver(retired, dir string, files layout.Files, old *tree, r *Report) error {
	if _, err := os.Lstat(retired); errors.Is(err, fs.ErrNotExist) {
		return nil // there was no old tree
	}
	return filepath.WalkDir(retired, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == retired {
			return nil
		}
		rel, err := filepath.Rel(retired, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		prev, seen := old.infos[rel]
		if d.IsDir() {
			if !seen {
				target := filepath.Join(dir, filepath.FromSlash(rel))
				if err := mkdirLike(target, retired, rel); err != nil {
					return err
				}
				r.Carried = append(r.Carried, rel+"/")
			}
			return nil
		}
		if seen && os.SameFile(prev, info) {
			return nil
		}
		target := rel
		if _, generated := files[rel]; generated || rel == ManifestName {
			target += ".nodegen-concurrent"
		}
		dst := filepath.Join(dir, filepath.FromSlash(target))
		if err := mkdirLike(filepath.Dir(dst), retired, filepath.ToSlash(filepath.Dir(rel))); err != nil {
			return err
		}
		if err := os.Rename(p, dst); err != nil {
			return err
		}
		r.Carried = append(r.Carried, target)
		return nil
	})
}

// mkdirLike makes the directory target, if missing, with the mode of
// retired/rel (the same directory in the old tree).
func mkdirLike(target, retired, rel string) error {
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	if info, err := os.Stat(filepath.Join(retired, filepath.FromSlash(rel))); err == nil {
		return os.Chmod(target, info.Mode().Perm())
	}
	return nil
}

// mode is the file mode of a generated file: scripts are executable.
func mode(p string) os.FileMode {
	if filepath.Ext(p) == ".sh" {
		return 0o755
	}
	return 0o644
}

func writeFile(path string, content []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil { // not subject to the umask
		f.Close()
		return err
	}
	return f.Close()
}

// swap puts staging in dir's place. With dir present, one atomic exchange
// (renameat2 RENAME_EXCHANGE on Linux, renamex_np RENAME_SWAP on macOS)
// swaps them and the old tree ends up at retired. Where the system or the
// file system has no exchange, two renames do it: dir to retired, then
// staging to dir; a crash between them leaves no dir but the whole old tree
// at retired, which CompareWith reads and the next WriteWith moves back first, so
// a reader still sees the old tree or the new one, never a mix.
func swap(staging, dir, retired string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(staging, dir)
	}
	err := exchange(staging, dir)
	if err == nil {
		return os.Rename(staging, retired)
	}
	if !errors.Is(err, errNoExchange) {
		return fmt.Errorf("replacing %s: %w", dir, err)
	}
	if err := os.Rename(dir, retired); err != nil {
		return fmt.Errorf("replacing %s: %w", dir, err)
	}
	if err := failAt("mid-swap"); err != nil {
		return err
	}
	if err := os.Rename(staging, dir); err != nil {
		if back := os.Rename(retired, dir); back != nil {
			return fmt.Errorf("replacing %s: %w (and the old tree stays at %s: %v)", dir, err, retired, back)
		}
		return fmt.Errorf("replacing %s: %w", dir, err)
	}
	return nil
}

// errNoExchange says exchange cannot swap two paths atomically here.
var errNoExchange = errors.New("no atomic exchange of two paths on this system")

// exchange swaps two paths atomically, or returns errNoExchange. Tests
// replace it to exercise the two-rename path.
var exchange = exchangePaths

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// lockPoll is how often a waiting run tries the lock again.
const lockPoll = 20 * time.Millisecond

// lock takes a lock on dir (a directory: on Unix a flock on the directory
// itself, so no lock file is left behind; on Windows a lock file in it),
// exclusive for a writer, shared for a reader, and returns its release.
// When another run holds it, it calls o.Waiting once and tries again
// until o's timeout, then gives up with an error.
func lock(dir string, exclusive bool, o Options) (func(), error) {
	f, err := openLock(dir)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.timeout())
	for waited := false; ; waited = true {
		ok, err := tryLock(f, exclusive)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", dir, err)
		}
		if ok {
			break
		}
		if !waited && o.Waiting != nil {
			o.Waiting(fmt.Sprintf("waiting for another nodegen run to finish with %s (giving up after %v)", dir, o.timeout()))
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("gave up after %v waiting for another nodegen run to release its lock on %s (set --lock-timeout or NODEGEN_LOCK_TIMEOUT to wait longer)", o.timeout(), dir)
		}
		time.Sleep(lockPoll)
	}
	return func() {
		unlockFile(f)
		f.Close()
	}, nil
}
