package source

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Digest computes a source's digest: for each file, in the order Open
// reads them (sorted by name), the length of its name, the name and the
// sha256 of its content, hashed with sha256. No two different sources (a
// file renamed, split, or its bytes moved into another) digest alike.
type Digest struct{ b []byte }

// Add adds the file name with content sum.
func (d *Digest) Add(name string, sum [sha256.Size]byte) {
	d.b = binary.BigEndian.AppendUint64(d.b, uint64(len(name)))
	d.b = append(d.b, name...)
	d.b = append(d.b, sum[:]...)
}

// Sum is the digest of the files added.
func (d *Digest) Sum() string {
	h := sha256.Sum256(d.b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// digest is Loaded.Digest: the digest of the bytes the loader gave CUE
// to evaluate (given), provided they are the bytes Open read and checked
// (read); "" when a file changed in between, or the loader did not say.
func (p *prefetcher) digest(files, paths []string, read [][sha256.Size]byte) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d Digest
	for i, name := range files {
		if given, ok := p.given[paths[i]]; !ok || given != read[i] {
			return ""
		}
		d.Add(name, read[i])
	}
	return d.Sum()
}

// Files lists the files Open reads in dir: every entry whose name ends
// in .cue and that is not a directory, sorted. It fails when dir or one
// of its parents holds a cue.mod: CUE then resolves imports from that
// module, files outside dir that a digest of these does not cover.
func Files(dir string) ([]string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for d := absDir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, "cue.mod")); !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is in a CUE module (%s): its imports may read files outside the source", dir, filepath.Join(d, "cue.mod"))
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return cueFiles(dir)
}

// cueFiles lists the names of the .cue files in dir, sorted: the files of
// the source (Open and Files read the same list).
func cueFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading source: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".cue") {
			files = append(files, e.Name())
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .cue files in %s", dir)
	}
	slices.Sort(files)
	return files, nil
}

// ReadFile reads the source file name of dir as Open does (a regular
// file, at most MaxFileSize bytes, never blocking on a FIFO) and returns
// its content with what the open file's fstat said after the read.
func ReadFile(dir, name string) ([]byte, os.FileInfo, error) {
	return readSourceFileInfo(filepath.Join(dir, name), filepath.Join(dir, name), MaxFileSize)
}
