package fastcheck

import (
	"testing"
	"time"
)

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

// SourceDigest is the source.Digest of dir's files as they are now.
func SourceDigest(dir string) (string, error) {
	d, _, _, _, err := sourceDigest(dir, nil, time.Now())
	return d, err
}
