package outdir

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// exchangePaths swaps a and b with one renameat2(RENAME_EXCHANGE).
func exchangePaths(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP {
		return errNoExchange // a file system or kernel without it
	}
	return err
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
