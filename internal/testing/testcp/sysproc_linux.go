package testcp

import "syscall"

// sysProcAttr makes the kernel kill the child if the test binary dies
// without running its cleanups (a -timeout panic, SIGKILL), so no
// kube-apiserver or etcd outlives it. Linux sends the signal when the OS
// thread that started the child exits; the Go runtime keeps its threads
// unless a goroutine exits while locked to one with runtime.LockOSThread.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
