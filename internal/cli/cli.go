// Package cli implements the nodegen command line.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/secrets"
	"github.com/nodegen/nodegen/internal/source"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitFindings = 1 // invalid input, stale output, failed check
	ExitUsage    = 2
)

// errFindings says the findings were already printed.
var errFindings = errors.New("findings reported")

// usageError is a usage mistake: exit 2.
type usageError struct{ error }

// streams are a command's standard streams.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// Main runs nodegen with args (without the program name) and returns the
// exit code. It never calls os.Exit.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := &streams{in: stdin, out: stdout, err: stderr}
	app := &cli.App{
		Name:  "nodegen",
		Usage: "render hybrid-cluster node groups into kube-env, join scripts, manifests and autoscaler config",
		Description: "nodegen reads CUE definitions of node groups and renders every artifact that must agree\n" +
			"with them: the MIG kube-env, the kubeadm join script, the GPU taint remover, the GPU\n" +
			"Operator values and the Cluster Autoscaler's flags and Helm values.",
		Reader:          stdin,
		Writer:          stdout,
		ErrWriter:       stderr,
		Version:         version(),
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    onUsageError,
		CommandNotFound: func(c *cli.Context, name string) {},
		Commands:        commands(s),
	}
	err := app.Run(append([]string{"nodegen"}, args...))
	return exitCode(s, err, args, app.Commands)
}

// commands lists every command, in the order help shows them.
func commands(s *streams) []*cli.Command {
	return []*cli.Command{
		genCommand(s),
		checkCommand(s),
		vetCommand(s),
		exportCommand(s),
		docsCommand(s),
		explainCommand(s),
		driftCommand(s),
		rolloutCommand(s),
		versionCommand(s),
	}
}

func onUsageError(c *cli.Context, err error, _ bool) error {
	return usageError{err}
}

func exitCode(s *streams, err error, args []string, cmds []*cli.Command) int {
	var ue usageError
	switch {
	case err == nil:
		if len(args) > 0 && !isKnownCommand(cmds, args[0]) && args[0] != "" && args[0][0] != '-' {
			fmt.Fprintf(s.err, "nodegen: unknown command %q; see nodegen help\n", args[0])
			return ExitUsage
		}
		return ExitOK
	case errors.Is(err, errFindings):
		return ExitFindings
	case errors.As(err, &ue):
		fmt.Fprintf(s.err, "nodegen: %v\n", ue.error)
		return ExitUsage
	case errors.As(err, new(*source.NameError)):
		fmt.Fprintf(s.err, "nodegen: %v\n", err)
		return ExitUsage
	default:
		fmt.Fprintf(s.err, "nodegen: %s\n", secrets.Redact(err.Error()))
		return ExitFindings
	}
}

// isKnownCommand reports whether name is one of cmds or help.
func isKnownCommand(cmds []*cli.Command, name string) bool {
	if name == "help" || name == "h" {
		return true
	}
	for _, c := range cmds {
		if c.HasName(name) {
			return true
		}
	}
	return false
}

// ioFlags are the flags every command shares.
type ioFlags struct {
	Source      string
	Clusters    cli.StringSlice
	Out         string
	Force       bool
	LockTimeout time.Duration
	// Full and Verbose are check's --full and --verbose (fastcheck.go).
	Full, Verbose bool
	// SourceDigest and ManifestDigest are set by a successful gen or
	// check: the source evaluated and out/'s record after the run.
	SourceDigest, ManifestDigest string
}

func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", c.Command.Name, c.Args().First())}
	}
	return nil
}

// warnCommands are the commands that print the warnings of a valid source
// (validate.Warnings) to stderr; they still exit 0.
var warnCommands = map[string]bool{"gen": true, "vet": true}

func cwdForHint() string {
	if cwd, err := os.Getwd(); err == nil {
		return "in " + cwd
	}
	return "in the working directory"
}

// printFindings prints findings with paths relative to the working
// directory and returns errFindings.
func printFindings(s *streams, list diag.List) error {
	cwd, _ := os.Getwd()
	secrets.RedactList(list).Print(s.err, cwd)
	return errFindings
}
