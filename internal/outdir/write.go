package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/par"
	"github.com/nodegen/nodegen/internal/render"
)

// FailPoint, when set, is called at named stages of Write; an error it
// returns aborts Write there, as a crash would. Tests use it; so does the
// NODEGEN_FAILPOINT environment variable of the CLI test binary (never of
// the shipped nodegen: the variable is read only by the tests' nodegen).
var FailPoint func(stage string) error

func failAt(stage string) error {
	if FailPoint == nil {
		return nil
	}
	return FailPoint(stage)
}

// Write makes dir hold exactly files plus the foreign files it already has.
// It holds an exclusive lock on dir's parent while it works, so two runs
// cannot interleave. When nothing changed it touches nothing. Otherwise it
// builds the complete new tree next to dir (unchanged and foreign files
// hard-linked, so their mtimes stay), then swaps the two trees in one
// atomic rename and removes the old one. Leftovers of an interrupted run
// are removed first.
func Write(dir string, files render.Files) (Report, error) {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Report{}, err
	}
	unlock, err := lock(parent, true)
	if err != nil {
		return Report{}, err
	}
	defer unlock()

	staging := sibling(dir, "new")
	retired := sibling(dir, "old")
	for _, p := range []string{staging, retired} {
		if err := os.RemoveAll(p); err != nil {
			return Report{}, fmt.Errorf("removing leftovers of an interrupted run: %w", err)
		}
	}

	r, old, err := compareTree(dir, files)
	if err != nil {
		return r, err
	}
	if r.Clean() {
		return r, nil
	}
	if err := buildTree(dir, staging, files, r, old); err != nil {
		os.RemoveAll(staging)
		return r, err
	}
	if err := failAt("before-swap"); err != nil {
		return r, err
	}
	if err := swap(staging, dir, retired); err != nil {
		os.RemoveAll(staging)
		return r, err
	}
	if err := failAt("after-swap"); err != nil {
		return r, err
	}
	if err := syncDir(parent); err != nil {
		return r, err
	}
	return r, os.RemoveAll(retired)
}

// sibling names a hidden working directory next to dir.
func sibling(dir, what string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".nodegen-"+what)
}

// buildTree creates the new tree at staging: the rendered files, and
// everything of the old tree that is not nodegen's (foreign files, links,
// empty directories). It creates the files in parallel and makes the tree
// durable with one syncfs rather than an fsync per file.
func buildTree(dir, staging string, files render.Files, r Report, old *tree) error {
	changed := map[string]bool{}
	for _, c := range r.Changes {
		changed[c.Path] = true
	}
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return err
	}
	keep := append(files.Paths(), r.Foreign...)
	errs := make([]error, len(keep))
	par.Do(len(keep), func(i int) {
		p := keep[i]
		dst := filepath.Join(staging, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			errs[i] = err
			return
		}
		src := filepath.Join(dir, filepath.FromSlash(p))
		if content, ok := files[p]; ok && changed[p] {
			errs[i] = writeFile(dst, content, mode(p))
		} else if err := os.Link(src, dst); err != nil {
			errs[i] = fmt.Errorf("keeping %s: %w", src, err)
		}
		if i == len(keep)/2 && errs[i] == nil {
			errs[i] = failAt("mid-tree")
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, p := range model.SortedKeys(old.emptyDirs) {
		if err := os.MkdirAll(filepath.Join(staging, filepath.FromSlash(p)), 0o755); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(staging, filepath.FromSlash(p)), old.emptyDirs[p]); err != nil {
			return err
		}
	}
	return syncFS(staging)
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

// swap puts staging in dir's place. With dir present, one renameat2
// RENAME_EXCHANGE swaps them atomically and the old tree ends up at
// retired.
func swap(staging, dir, retired string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(staging, dir)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, staging, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE); err != nil {
		return fmt.Errorf("replacing %s: %w", dir, err)
	}
	return os.Rename(staging, retired)
}

// syncFS makes everything written to the file system holding dir durable
// (syncfs(2)): one call for a whole tree of new files and directories.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// lock takes a flock on dir (a directory: no lock file is left behind),
// exclusive for a writer, shared for a reader, and returns its release.
func lock(dir string, exclusive bool) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
