//go:build unix

package outdir

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openLock opens what lock locks: the directory itself.
func openLock(dir string) (*os.File, error) { return os.Open(dir) }

// tryLock takes a flock without waiting; false when another holds it.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func unlockFile(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
