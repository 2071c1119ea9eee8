package outdir

import "github.com/nodegen/nodegen/internal/layout"

// Write is WriteWith without options.
func Write(dir string, files layout.Files) (Report, error) {
	return WriteWith(dir, files, Options{})
}

// Compare is CompareWith without options.
func Compare(dir string, files layout.Files) (Report, error) {
	return CompareWith(dir, files, Options{})
}
