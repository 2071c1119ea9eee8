package outdir

import "golang.org/x/sys/unix"

// exchangePaths swaps a and b with renamex_np(RENAME_SWAP), atomic on APFS;
// file systems without it make the caller fall back to two renames.
func exchangePaths(a, b string) error {
	err := unix.RenamexNp(a, b, unix.RENAME_SWAP)
	if err == unix.ENOTSUP || err == unix.EINVAL {
		return errNoExchange
	}
	return err
}
