package cli_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/nodegen/nodegen/internal/outdir"
)

// setFailPoint arms outdir's failure injection in the test binary's
// nodegen (the shipped binary has no such hook): spec is a stage of
// outdir.Write ("mid-tree", "before-swap", "after-swap") where the write
// fails, or "<stage>:kill" to have the process SIGKILL itself there, as a
// crash would. Scripts set it with NODEGEN_FAILPOINT.
func setFailPoint(spec string) {
	if spec == "" {
		return
	}
	stage, kill := strings.CutSuffix(spec, ":kill")
	outdir.FailPoint = func(at string) error {
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
