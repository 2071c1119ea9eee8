package onprem

// The renderer of one join script, for the tests of package onprem_test.
var JoinScript = joinScript
