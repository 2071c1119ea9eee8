package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// The inputs and outputs of the commands that read the world (explain,
// drift, rollout): -o/--output, JSON, a file or stdin.

// outputFlag is -o/--output: table or json.
func outputFlag(dst *string) cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output `FORMAT`: table or json", Destination: dst}
}

func checkOutput(format string) error {
	if format != "table" && format != "json" {
		return usageError{fmt.Errorf("unknown output format %q: use table or json", format)}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// readInput reads a file, or stdin for "-".
func readInput(s *streams, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(s.in)
	}
	return os.ReadFile(name)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
