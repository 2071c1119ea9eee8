package revision

// Set returns data with every revision label's value replaced by rev
// (data itself when every value is rev already): an older revision, or the
// placeholder, put back in the tests.
func Set(data []byte, rev string) []byte { return replaceValues(data, rev) }
