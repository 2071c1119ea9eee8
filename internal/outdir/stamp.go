package outdir

import (
	"io/fs"
	"strconv"
	"time"
)

// RacyWindow is how old a file's last change must be for its stamp to
// stand for its content. A file's ctime (the kernel sets it on every
// write, truncation, chmod, link or rename, and nobody can set it back)
// has the granularity of the file system's clock: a write in the same
// tick as the stamp's could leave it unchanged. A stamp is therefore
// taken only of a file last changed well before the look (git calls
// such files "racily clean" and re-reads them too); 2 s covers the
// coarsest clocks of local file systems.
const RacyWindow = 2 * time.Second

// Stamp is what lstat says about a file, enough to tell that it has not
// changed since: size, mode, device, inode, mtime and ctime. ok is false
// when the platform has no ctime to offer or the file changed within
// RacyWindow before now (the tests' binaries may change the window: see
// StampWindow in testhooks.go).
func Stamp(info fs.FileInfo, now time.Time) (stamp string, ok bool) {
	dev, ino, mtime, ctime, ok := statTimes(info)
	if !ok || ctime >= now.Add(-racyWindow()).UnixNano() {
		return "", false
	}
	b := make([]byte, 0, 80)
	for i, n := range []uint64{uint64(info.Size()), uint64(info.Mode()), dev, ino, uint64(mtime), uint64(ctime)} {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendUint(b, n, 16)
	}
	return string(b), true
}
