package outdir

import (
	"testing"

	"github.com/nodegen/nodegen/internal/testing/testhooks"
)

// TestHooked runs the tests that need the test hooks (the _test.go files
// built only with them), in a binary built with them when this one is not.
func TestHooked(t *testing.T) { testhooks.Run(t) }
