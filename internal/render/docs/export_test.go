package docs

// What the tests of package docs_test, which render whole sources through
// package render, check the pages against.
var (
	Provenance               = provenance
	JoinTokenFirstRunCommand = joinTokenFirstRunCommand
)
