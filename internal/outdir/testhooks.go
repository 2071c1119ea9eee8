//go:build nodegen_testhooks

package outdir

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// The test hooks of this package. They are compiled only into the tests'
// binaries, built with -tags nodegen_testhooks (see
// internal/testing/testhooks); the nodegen users build has none of them
// (testhooks_off.go).

// FailPoint, when set, is called at named stages of WriteWith ("mid-tree",
// "before-swap", "mid-swap", "after-swap"); an error it returns aborts
// WriteWith there, as a crash would. A binary built with the hooks arms it
// from NODEGEN_FAILPOINT: "<stage>" makes WriteWith fail there, and
// "<stage>:kill" makes the process SIGKILL itself there.
var FailPoint = failPointFromEnv(os.Getenv("NODEGEN_FAILPOINT"))

// StampWindow is the racy window Stamp applies: RacyWindow, unless a test
// changes it.
var StampWindow = RacyWindow

func failAt(stage string) error {
	if FailPoint == nil {
		return nil
	}
	return FailPoint(stage)
}

func racyWindow() time.Duration { return StampWindow }

// failPointFromEnv is the FailPoint that spec (NODEGEN_FAILPOINT) asks
// for, nil for "".
func failPointFromEnv(spec string) func(string) error {
	if spec == "" {
		return nil
	}
	stage, kill := strings.CutSuffix(spec, ":kill")
	return func(at string) error {
		if at != stage {
			return nil
		}
		if kill {
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Kill()
				select {} // wait for the signal
			}
		}
		return fmt.Errorf("failpoint %s", at)
	}
}
