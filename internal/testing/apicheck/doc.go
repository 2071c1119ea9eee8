// Package apicheck holds TestNoTestOnlyExports, which type-checks the
// module with its tests and fails on an exported name of a package under
// internal/ that only that package's own tests use: the name is part of
// no package's interface and is unexported (or deleted). It has no code
// of its own outside the test.
package apicheck
