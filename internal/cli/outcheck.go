package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// outDirUsable turns an output directory gen and check cannot work on
// into a usage error with a hint, once the source is read and before the
// output directory is: a symbolic link (gen
// replaces the directory in one rename, which would replace the link, not
// the directory it names, and check would compare the link's own empty
// tree), something other than a directory, and, for check (mustExist),
// none at all: a mistyped --out, or gen never run, rather than every file
// reported missing.
func outDirUsable(out string, mustExist bool) error {
	fi, err := os.Lstat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !mustExist {
			return nil
		}
		return usageError{fmt.Errorf("no output directory %s (%s): run `nodegen gen --out %s` first, or name the existing one with --out DIR", filepath.Clean(out), cwdForHint(), out)}
	case err != nil:
		return fmt.Errorf("reading the output directory: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := filepath.EvalSymlinks(out)
		if target == "" {
			target, _ = os.Readlink(out)
		}
		return usageError{fmt.Errorf("--out %s is a symbolic link (to %s): nodegen replaces the output directory in one rename, which would replace the link and not the directory it names; pass --out %s", out, target, target)}
	case !fi.IsDir():
		return usageError{fmt.Errorf("--out %s is not a directory", out)}
	}
	return nil
}
