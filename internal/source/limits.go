package source

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"syscall"
	"unicode/utf8"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/diag"
)

// Limits on what nodegen reads, so that a hostile or mistaken source
// (a FIFO, a link to /dev/zero, megabytes of garbage) ends with a clear
// message instead of blocking or exhausting memory. A realistic source is a
// few kilobytes per group: 2,000 groups fit in MaxSourceSize.
const (
	MaxFileSize   = 4 << 20  // bytes per .cue file
	MaxSourceSize = 16 << 20 // bytes of all .cue files of a source
)

// readSourceFile reads a regular file of at most limit bytes. It never
// blocks on a FIFO or device: the file is opened non-blocking and checked
// to be regular before anything is read.
func readSourceFile(path, display string, limit int64) ([]byte, error) {
	b, _, err := readSourceFileInfo(path, display, limit)
	return b, err
}

// readSourceFileInfo is readSourceFile that also returns what the open
// file's fstat says after the read.
func readSourceFileInfo(path, display string, limit int64) ([]byte, os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file but %s; nodegen reads only regular .cue files", display, fileKind(st.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file but %s; nodegen reads only regular .cue files", display, fileKind(st.Mode()))
	}
	if st.Size() > limit {
		return nil, nil, fmt.Errorf("%s is %d bytes, over nodegen's limit of %d bytes per .cue file", display, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(b)) > limit {
		return nil, nil, fmt.Errorf("%s is over nodegen's limit of %d bytes per .cue file", display, limit)
	}
	if st, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	return b, st, nil
}

// checkText reports the first NUL byte or invalid UTF-8 sequence of a
// source file at its line and column: CUE source is UTF-8 text, and the
// parser's error list grows quadratically on binary input.
func checkText(path string, b []byte) (diag.Finding, bool) {
	off, what := -1, ""
	if i := bytes.IndexByte(b, 0); i >= 0 {
		off, what = i, "a NUL byte"
	}
	for i := 0; i < len(b) && (off < 0 || i < off); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			off, what = i, "invalid UTF-8"
			break
		}
		i += size
	}
	if off < 0 {
		return diag.Finding{}, true
	}
	tf := token.NewFile(path, -1, len(b))
	tf.SetLinesForContent(b)
	return diag.Finding{Pos: tf.Pos(off, token.NoRelPos), Msg: fmt.Sprintf("%s: a .cue file must be UTF-8 text; is this a binary file?", what)}, false
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// MaxStructFields bounds the fields of one struct literal (a group's labels,
// the nodeGroups of one file). CUE inserts and lists the fields of a struct
// in time quadratic in their number (adt nodeContext.getArc,
// Value.Fields → Vertex.LookupRaw): 10,000 labels took 2.6 s, 40,000 took
// 35 s, 100,000 did not finish. Far fewer fit in a kube-env (256 KiB).
const MaxStructFields = 5000

// checkStructSizes reports every struct literal of f with more than
// MaxStructFields fields, before evaluation.
func checkStructSizes(f *ast.File) diag.List {
	var list diag.List
	count := func(pos token.Pos, n int) {
		if n > MaxStructFields {
			list.Add(pos, "", "%d fields in one struct, over nodegen's limit of %d (CUE's evaluation time grows with the square of it; a kube-env holds far fewer labels)", n, MaxStructFields)
		}
	}
	count(f.Pos(), len(f.Decls))
	ast.Walk(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.StructLit); ok {
			count(s.Pos(), len(s.Elts))
		}
		return true
	}, nil)
	return list
}
