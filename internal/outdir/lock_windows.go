package outdir

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// LockFileName is the file Windows runs lock in the output directory's
// parent: Windows cannot lock a directory handle.
const LockFileName = ".nodegen.lock"

// openLock opens (creating it) the lock file in dir.
func openLock(dir string) (*os.File, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(dir, LockFileName), os.O_RDWR|os.O_CREATE, 0o600)
}

// tryLock takes LockFileEx without waiting; false when another holds it.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, new(windows.Overlapped))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return err == nil, err
}

func unlockFile(f *os.File) {
	windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, new(windows.Overlapped))
}
