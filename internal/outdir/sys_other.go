//go:build !linux && !darwin

package outdir

// exchangePaths: no atomic exchange of two paths here; swap uses two
// renames and the recovery of an interrupted swap.
func exchangePaths(a, b string) error { return errNoExchange }
