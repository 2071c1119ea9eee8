package scripttest

import (
	"os/exec"
	"strings"
	"testing"
)

const constantsScript = `#!/usr/bin/env bash
set -euo pipefail
readonly URL=http://metadata.google.internal/computeMetadata/v1
DELAY=10
f() {
	local DELAY=3
	echo "${DELAY}"
}
  URL=indented
printf '%s|%s\n' "${URL}" "${DELAY}"
`

func TestWithConstantsReplacesOnlyTheValue(t *testing.T) {
	got, err := WithConstants([]byte(constantsScript), map[string]string{
		"URL":   "http://127.0.0.1:8080/it's $(here)",
		"DELAY": "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(strings.Replace(constantsScript,
		"readonly URL=http://metadata.google.internal/computeMetadata/v1\n", `readonly URL='http://127.0.0.1:8080/it'\''s $(here)'`+"\n", 1),
		"DELAY=10\n", "DELAY='0'\n", 1)
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	// The indented line is not a top-level assignment: run without it.
	out, err := exec.Command("bash", "-c", strings.Replace(string(got), "  URL=indented\n", "", 1)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if string(out) != "http://127.0.0.1:8080/it's $(here)|0\n" {
		t.Errorf("the script printed %q", out)
	}
}

func TestWithConstantsRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		script, constant, want string
	}{
		"a missing name":            {constantsScript, "TIMEOUT", "no line TIMEOUT=... or readonly TIMEOUT=..."},
		"a name only indented":      {"f() {\n\tTIMEOUT=1\n}\n", "TIMEOUT", "no line TIMEOUT="},
		"a prefix of a name":        {"DELAYS=1\n", "DELAY", "no line DELAY="},
		"a name assigned twice":     {"DELAY=1\nreadonly DELAY=2\n", "DELAY", "assigns DELAY on 2 lines (line 1, line 2), want one"},
		"a name that is not a name": {constantsScript, "URL=x", "not a shell variable name"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := WithConstants([]byte(c.script), map[string]string{c.constant: "v"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %q, %v; want an error containing %q", got, err, c.want)
			}
		})
	}
}

func TestHasConstant(t *testing.T) {
	for name, want := range map[string]bool{"URL": true, "DELAY": true, "f": false, "TIMEOUT": false} {
		if got := hasConstant([]byte(constantsScript), name); got != want {
			t.Errorf("hasConstant(%s) = %v, want %v", name, got, want)
		}
	}
	if hasConstant([]byte("A=1\nA=2\n"), "A") {
		t.Error("hasConstant of a name assigned twice")
	}
}

func TestConstant(t *testing.T) {
	got, err := Constant([]byte(constantsScript), "URL")
	if err != nil || got != "http://metadata.google.internal/computeMetadata/v1" {
		t.Errorf("Constant(URL) = %q, %v", got, err)
	}
	for name, c := range map[string]struct{ script, want string }{
		"a missing name":     {constantsScript + "", "assigns TIMEOUT on 0 top-level lines"},
		"a name twice":       {"TIMEOUT=1\nTIMEOUT=2\n", "assigns TIMEOUT on 2 top-level lines"},
		"a quoted value":     {"TIMEOUT='1'\n", "line 1: TIMEOUT is not set to a plain word: '1'"},
		"an expansion":       {"x\nreadonly TIMEOUT=${T}\n", "line 2: TIMEOUT is not set to a plain word"},
		"an empty value":     {"TIMEOUT=\n", "not set to a plain word"},
		"a trailing comment": {"TIMEOUT=1 # s\n", "not set to a plain word"},
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := Constant([]byte(c.script), "TIMEOUT"); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %q, %v; want an error containing %q", got, err, c.want)
			}
		})
	}
}
