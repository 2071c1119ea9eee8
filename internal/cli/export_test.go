package cli

// VersionOf is versionOf, for the tests.
var VersionOf = versionOf
