package k8stest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
)

// day0ToolEnv, set in the environment of a process of this test binary,
// makes the process the tool its program name (argv[0]) names instead of
// the tests: nodegen itself, or the terraform stand-in. The day-0 script
// test puts links of those names to the test binary on the PATH of the
// documented commands it runs.
const day0ToolEnv = "NODEGEN_TEST_DAY0_TOOL"

func TestMain(m *testing.M) {
	if os.Getenv(day0ToolEnv) != "" {
		os.Exit(day0Tool(filepath.Base(os.Args[0]), os.Args[1:]))
	}
	os.Exit(m.Run())
}

// day0Tool runs the tool name with args and returns its exit code.
func day0Tool(name string, args []string) int {
	switch name {
	case "nodegen":
		return cli.Command(args, os.Stdin, os.Stdout, os.Stderr)
	case "terraform":
		return terraformStandIn(args, os.Stdin, os.Stdout, os.Stderr)
	}
	fmt.Fprintf(os.Stderr, "%s: not a tool of the day-0 test\n", name)
	return 127
}
