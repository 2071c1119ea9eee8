// Command schemadoc writes the description of the embedded schema that
// package schemadoc serves (schemadoc.Walk, with the digest of the schema
// it was walked from), as go generate runs it in internal/schemadoc.
//
// Usage:
//
//	go run ./hack/schemadoc -out internal/schemadoc/walked.json
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/nodegen/nodegen/internal/schemadoc"
)

func main() {
	out := flag.String("out", "walked.json", "file to write")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "schemadoc:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	s, err := schemadoc.Walk()
	if err != nil {
		return err
	}
	b, err := encode(schemadoc.Walked{Schema: schemadoc.Digest(), Description: s})
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// encode is walked.json's format: indented JSON, one field a line, so
// that a change of the schema reads as a diff.
func encode(w schemadoc.Walked) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
