package testcp

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a started child process whose output goes to a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string

	done    chan struct{} // closed when Wait has returned
	waitErr error         // Wait's result; read only after done is closed

	stopOnce sync.Once
	stopErr  error
}

// startProcess starts path with args, its stdout and stderr going to the
// file logPath, and reaps it in the background.
func startProcess(path, logPath string, args ...string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f // an *os.File is handed to the child as is
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	f.Close() // the child has its own descriptor now
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &process{name: cmd.Path, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitErr is how the process ended; call it only once exited is true.
func (p *process) exitErr() error {
	if p.waitErr == nil {
		return fmt.Errorf("exit status 0")
	}
	return p.waitErr
}

// stop sends SIGTERM to the process's PID, then SIGKILL if it has not exited
// after grace, and waits for it. An exit caused by the signal is not an
// error; an earlier exit was reported by waitFor or is of no interest.
// Only the first call does anything.
func (p *process) stop(grace time.Duration) error {
	p.stopOnce.Do(func() {
		if p.exited() {
			return
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !p.exited() {
			p.stopErr = fmt.Errorf("stopping %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
		}
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p.stopErr
}

// tail returns the last n lines of the log file.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(string(bytes.TrimRight(b, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
