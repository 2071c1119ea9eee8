//go:build unix

package scripttest

import (
	"os"
	"syscall"
	"testing"
)

// OtherFilesystemDir returns a new directory, removed after the test, on a
// filesystem other than that of t.TempDir(): it stands in for a local SSD
// mounted over the kubelet's or containerd's directory. It uses /dev/shm
// (a tmpfs) and skips the test where that is missing or on the same
// filesystem.
func OtherFilesystemDir(t testing.TB) string {
	t.Helper()
	var tmp, shm syscall.Stat_t
	if syscall.Stat(t.TempDir(), &tmp) != nil || syscall.Stat("/dev/shm", &shm) != nil || tmp.Dev == shm.Dev {
		t.Skip("no /dev/shm on a filesystem other than the temporary directory's")
	}
	dir, err := os.MkdirTemp("/dev/shm", "nodegen-ssd-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
