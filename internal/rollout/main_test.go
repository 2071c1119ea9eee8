package rollout_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// parallelTests is how many tests run at once when -parallel is not
// given: the tests against the real API server spend most of their time
// waiting (drain timeouts of 30 s, the vet minimum; polls), not on the
// CPU, so more than go test's default of GOMAXPROCS run side by side.
const parallelTests = 4

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", fmt.Sprint(parallelTests)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	creds, stop, err := startTokenServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	sharedCredentials = creds
	os.Setenv("GOOGLE_APPLICATION_CREDENTIALS", creds)
	code := m.Run()
	stop()
	os.Exit(code)
}
