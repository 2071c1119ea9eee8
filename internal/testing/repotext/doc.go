// Package repotext holds TestTrackedFilesSpeakAboutTheProject, which reads
// every file git tracks and fails on text that is about something other
// than the project: a reference to a numbered issue or to a task brief, a
// path into documents outside the repository, or an absolute path of the
// machine a file was written on. It has no code of its own outside the test.
package repotext
