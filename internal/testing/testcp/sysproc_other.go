//go:build !linux

package testcp

import "syscall"

// sysProcAttr has nothing to add outside Linux: there, a child whose test
// binary died without cleaning up keeps running.
func sysProcAttr() *syscall.SysProcAttr { return nil }
