package rollout

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress reports a rollout as it goes: a line per step; while waiting,
// on a terminal one status line rewritten in place, elsewhere (CI, a log
// file) a plain line when a wait starts and then every Heartbeat.
type Progress struct {
	W        io.Writer
	Terminal bool
	// Heartbeat is how often a plain wait line repeats (default 30s).
	Heartbeat time.Duration

	mu       sync.Mutex
	status   bool      // a terminal status line is showing
	lastWait time.Time // when the last plain wait line was written
	waiting  bool
}

// Step writes one line.
func (p *Progress) Step(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.W, "rollout: "+format+"\n", args...)
	p.waiting = false
}

// Wait shows what the rollout is waiting for.
func (p *Progress) Wait(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	if p.Terminal {
		fmt.Fprintf(p.W, "\r\x1b[K… %s", msg)
		p.status = true
		return
	}
	beat := p.Heartbeat
	if beat == 0 {
		beat = 30 * time.Second
	}
	if !p.waiting || time.Since(p.lastWait) >= beat {
		fmt.Fprintf(p.W, "rollout: %s\n", msg)
		p.lastWait = time.Now()
		p.waiting = true
	}
}

// Done ends a wait.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.waiting = false
}

func (p *Progress) clear() {
	if p.status {
		fmt.Fprint(p.W, "\r\x1b[K")
		p.status = false
	}
}
