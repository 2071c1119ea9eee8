//go:build !linux

package outdir

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// syncFS makes the tree at dir durable where there is no syncfs(2): every
// file, then every directory (on macOS, Go's File.Sync is F_FULLFSYNC).
// Windows cannot sync a directory handle; its renames are journaled by
// NTFS.
func syncFS(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 || (d.IsDir() && runtime.GOOS == "windows") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return fmt.Errorf("syncing %s: %w", p, err)
		}
		return nil
	})
}
