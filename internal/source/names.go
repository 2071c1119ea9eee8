package source

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// NameError is a source directory or source file whose name nodegen
// cannot carry into its artifacts: the name reaches every generated file's
// header line and the docs, so a byte that ends a line there, or that is
// not text at all, is refused before anything is read.
type NameError struct {
	What string // "source directory" or "source file"
	Name string
	Why  string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("%s name %s %s; rename it", e.What, strconv.QuoteToASCII(e.Name), e.Why)
}

// CheckName says why name cannot be the name of a source directory or of
// a source file (what says which), or returns nil. Refused: bytes that
// are not UTF-8; control characters (C0, DEL, C1: line feeds, carriage
// returns, NUL, escapes); the Unicode line and paragraph separators;
// the bidirectional formatting characters, which make text read other
// than it is (the "Trojan Source" characters, CVE-2021-42574); and the
// byte-order mark. Everything else a file system allows is escaped where
// it lands.
func CheckName(what, name string) error {
	bad := func(why string) error { return &NameError{What: what, Name: name, Why: why} }
	if !utf8.ValidString(name) {
		return bad("is not valid UTF-8")
	}
	for _, r := range name {
		switch {
		case unicode.IsControl(r):
			return bad(fmt.Sprintf("holds the control character %U", r))
		case r == '\u2028' || r == '\u2029':
			return bad(fmt.Sprintf("holds the line or paragraph separator %U", r))
		case unicode.Is(unicode.Bidi_Control, r):
			return bad(fmt.Sprintf("holds the bidirectional formatting character %U", r))
		case r == '\uFEFF':
			return bad("holds a byte-order mark (U+FEFF)")
		}
	}
	return nil
}

// CheckNames checks the name of the source directory dir (as the loader
// names the source: the last element of its absolute path) and of every
// .cue file in it.
func CheckNames(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := CheckName("source directory", filepath.Base(abs)); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // reported where the files are read
	}
	for _, e := range entries {
		if err := CheckName("source file", e.Name()); err != nil && filepath.Ext(e.Name()) == ".cue" {
			return err
		}
	}
	return nil
}
