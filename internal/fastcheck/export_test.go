package fastcheck

import "testing"

// SetFingerprint makes the running nodegen's fingerprint fp for t.
func SetFingerprint(t testing.TB, fp string) {
	old := fingerprint
	fingerprint = func() (string, error) { return fp, nil }
	t.Cleanup(func() { fingerprint = old })
}

// Fingerprint is the running binary's fingerprint.
var Fingerprint = func() (string, error) { return fingerprint() }

// GoBuildID and ComputedBuildID are goBuildID and computedBuildID.
var (
	GoBuildID       = goBuildID
	ComputedBuildID = computedBuildID
)
