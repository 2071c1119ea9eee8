package fastcheck

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// executable opens the file of the running program. On Linux that is
// /proc/self/exe, the very file the kernel mapped, even if the path it
// was started from has since been replaced (a `go install` during a
// run); elsewhere it is os.Executable's path.
func executable() (*os.File, error) {
	if runtime.GOOS == "linux" {
		if f, err := os.Open("/proc/self/exe"); err == nil {
			return f, nil
		}
	}
	p, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// binaryFingerprint identifies the running nodegen's code: its Go build
// ID when the linker wrote one, otherwise the sha256 of the whole
// executable.
//
// A Go build ID ends with the linker's content ID, a hash of the binary's
// bytes (the ID itself excepted): any change to the code, an embedded
// file or the toolchain that changes a byte of the binary changes it,
// including a `go run` of an edited tree whose module version stays
// "(devel)". Reading it costs a look at the first pages of the file;
// hashing the whole executable (tens of megabytes) costs a few hundred
// milliseconds, so it is only the fallback.
func binaryFingerprint() (string, error) {
	f, err := executable()
	if err != nil {
		return "", err
	}
	defer f.Close()
	if id, err := goBuildID(f); err == nil && computedBuildID(id) {
		return "go-buildid:" + id, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// The Go linker writes the build ID into an ELF note (name "Go", type 4,
// section .note.go.buildid) and, on the other formats, as the string
// `\xff Go build ID: "<id>"\n \xff` at the start of the text segment,
// within the file's first pages.
const (
	elfGoNoteType = 4
	rawPrefix     = "\xff Go build ID: \""
	rawSuffix     = "\"\n \xff"
	rawReadSize   = 64 << 10
)

var errNoBuildID = errors.New("no Go build ID")

// computedBuildID reports whether id has the form of a build ID the go
// command computed for an executable: four hashes of 20 URL-safe base64
// characters, the last the content ID. A build ID set by hand
// (-ldflags=-buildid=..., as some build systems do for reproducibility)
// may stay the same across code changes and is not trusted.
func computedBuildID(id string) bool {
	parts := strings.Split(id, "/")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if len(p) != 20 || strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}

// goBuildID reads the Go build ID of an executable.
func goBuildID(f *os.File) (string, error) {
	if ef, err := elf.NewFile(f); err == nil {
		s := ef.Section(".note.go.buildid")
		if s == nil {
			return "", errNoBuildID
		}
		b, err := s.Data()
		if err != nil {
			return "", err
		}
		return elfNoteBuildID(b, ef.ByteOrder)
	}
	head := make([]byte, rawReadSize)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	i := bytes.Index(head, []byte(rawPrefix))
	if i < 0 {
		return "", errNoBuildID
	}
	rest := head[i+len(rawPrefix):]
	j := bytes.Index(rest, []byte(rawSuffix))
	if j <= 0 {
		return "", errNoBuildID
	}
	return string(rest[:j]), nil
}

// elfNoteBuildID decodes an ELF note: namesz, descsz, type (4 bytes
// each), the name padded to 4 bytes, the description.
func elfNoteBuildID(b []byte, order interface{ Uint32([]byte) uint32 }) (string, error) {
	if len(b) < 12 {
		return "", errNoBuildID
	}
	namesz, descsz, typ := order.Uint32(b), order.Uint32(b[4:]), order.Uint32(b[8:])
	nameEnd := 12 + int(namesz)
	descStart := 12 + (int(namesz)+3)&^3
	if typ != elfGoNoteType || namesz != 4 || nameEnd > len(b) || string(b[12:nameEnd]) != "Go\x00\x00" ||
		descsz == 0 || descStart+int(descsz) > len(b) {
		return "", fmt.Errorf("malformed Go build ID note: %w", errNoBuildID)
	}
	return string(b[descStart : descStart+int(descsz)]), nil
}
