// Package docexamples holds TestDocExamples, which runs the commands the
// README and docs/ show on the shipped example and compares what they print
// with what the docs say, and checks the docs' relative links. It has no
// code of its own outside the test.
package docexamples
