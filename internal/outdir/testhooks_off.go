//go:build !nodegen_testhooks

package outdir

import "time"

// Without the test hooks (testhooks.go), the stages of WriteWith cannot fail
// on purpose and the racy window is RacyWindow.

func failAt(string) error { return nil }

func racyWindow() time.Duration { return RacyWindow }
