//go:build !race

package verify

// raceDetector is set when the tests run under the race detector.
const raceDetector = false
