//go:build !unix

package scripttest

import "testing"

// OtherFilesystemDir skips the test: /dev/shm, the filesystem it stands in
// for a local SSD with on Unix, does not exist here.
func OtherFilesystemDir(t testing.TB) string {
	t.Helper()
	t.Skip("no /dev/shm on this platform")
	return ""
}
