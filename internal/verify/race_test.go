//go:build race

package verify

// raceDetector is set when the tests run under the race detector, which
// makes the single-goroutine property tests' thousands of parses slow
// without finding anything they could race on.
const raceDetector = true
