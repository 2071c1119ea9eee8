package outdir

import (
	"io/fs"
	"syscall"
)

// statTimes returns a file's device, inode, mtime and ctime (ns).
func statTimes(info fs.FileInfo) (dev, ino uint64, mtime, ctime int64, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, 0, false
	}
	return uint64(st.Dev), st.Ino, st.Mtim.Nano(), st.Ctim.Nano(), true
}
