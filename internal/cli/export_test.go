package cli

// VersionOf is versionOf, for the tests.
var VersionOf = versionOf

// CommandNames are the names of nodegen's commands, in help's order.
func CommandNames() []string {
	var names []string
	for _, c := range commands(&streams{}) {
		names = append(names, c.Name)
	}
	return names
}
