//go:build linux

package vpnlab

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestInNSKeepsItsThread starts, from inside inNS, a child that the kernel
// kills when the thread that started it ends (Pdeathsig, as the lab's
// daemons are started): the child is still running after inNS returned,
// so inNS never ends a thread that a daemon of a lab running in parallel
// may have been started from.
func TestInNSKeepsItsThread(t *testing.T) {
	requireLab(t)
	ns := fmt.Sprintf("vpnlab-inns-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", ns, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	// Five times: a goroutine may run on the main thread, which Go
	// never ends.
	var children []*exec.Cmd
	var dones []chan error
	for range 5 {
		var child *exec.Cmd
		err := inNS(ns, func() error {
			child = exec.Command("sleep", "60")
			child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			return child.Start()
		})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- child.Wait() }()
		children, dones = append(children, child), append(dones, done)
	}
	defer func() {
		for i, c := range children {
			_ = c.Process.Kill()
			<-dones[i]
		}
	}()
	time.Sleep(time.Second)
	for i, done := range dones {
		select {
		case err := <-done:
			dones[i] <- err
			t.Errorf("child %d, started in inNS, ended when inNS returned (%v): inNS ended its thread", i, err)
		default:
		}
	}
}
