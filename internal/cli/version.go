package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// version is nodegen's module version and, when the build recorded it,
// the VCS revision it was built from: what a user pins in a commit hook
// and in CI must be the same everywhere, and this says which one runs.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" {
		v += " (" + rev + modified + ")"
	}
	return v + " " + bi.GoVersion
}

func versionCommand(s *streams) *cli.Command {
	return &cli.Command{
		Name:         "version",
		Usage:        "print nodegen's version, VCS revision and Go version",
		Description:  "version prints the module version (the tag of a tagged commit; for any other commit Go's\npseudo-version, v0.0.0-<commit time>-<commit>; (devel) when the build recorded no VCS\ninformation), the commit it was built from when known (+dirty for local changes), and the\nGo version. --version prints the same.",
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			return printVersion(s)
		},
	}
}

// printVersion prints the line of nodegen version and --version.
func printVersion(s *streams) error {
	_, err := fmt.Fprintf(s.out, "nodegen %s\n", version())
	return err
}
