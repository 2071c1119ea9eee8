package source

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// digest hashes the files of a source: for each file, in the order Open
// reads them (sorted by name), the length of its name, the name, the
// length of its content and the content, so that no two different
// sources (a file renamed, split, or its bytes moved into another) hash
// alike.
type digest struct{ h hash.Hash }

func newDigest() digest { return digest{sha256.New()} }

func (d digest) add(name string, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(name)))
	d.h.Write(n[:])
	d.h.Write([]byte(name))
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	d.h.Write(n[:])
	d.h.Write(b)
}

func (d digest) sum() string { return "sha256:" + hex.EncodeToString(d.h.Sum(nil)) }

// DigestDir is the Digest that Open would give dir's files as they are
// now, without evaluating them. It reads the same files the same way
// (every .cue entry of dir that is not a directory, regular files only,
// MaxFileSize at most each, MaxSourceSize in all) and fails where Open
// would fail to read them.
//
// It also fails when dir or one of its parents holds a cue.mod: CUE then
// resolves imports from that module, files outside dir that Digest does
// not cover.
func DigestDir(dir string) (string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := absDir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, "cue.mod")); !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s is in a CUE module (%s): its imports may read files outside the source", dir, filepath.Join(d, "cue.mod"))
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".cue") {
			files = append(files, e.Name())
		}
	}
	if len(files) == 0 {
		return "", fmt.Errorf("no .cue files in %s", dir)
	}
	slices.Sort(files)
	d := newDigest()
	total := 0
	for _, name := range files {
		b, err := readSourceFile(filepath.Join(absDir, name), filepath.Join(dir, name), MaxFileSize)
		if err != nil {
			return "", err
		}
		if total += len(b); total > MaxSourceSize {
			return "", fmt.Errorf("the .cue files of %s hold more than %d bytes", dir, MaxSourceSize)
		}
		d.add(name, b)
	}
	return d.sum(), nil
}
