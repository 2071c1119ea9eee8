// Package fastcheck is the shortcut of `nodegen check`: it answers "out/
// is current" without evaluating the source when a full run of this very
// nodegen binary, with the same flags and environment, already found that
// the source as it is now renders to exactly the files out/ holds now.
//
// The evidence is a record, kept outside the repository (in the user's
// cache directory, one per output directory) and written after a
// successful full `check` or `gen`. It holds:
//
//   - the fingerprint of the nodegen binary (its Go build ID, which ends
//     with a hash of the binary's content; see binaryFingerprint),
//   - a digest of the inputs that shape a render besides the source files:
//     the absolute source and output directories, the command's flags that
//     matter and the environment variables nodegen, CUE and the Go runtime
//     read (NODEGEN_*, CUE_*, GODEBUG),
//   - the source.Digest of the .cue files that were evaluated, as read,
//   - the digest of out/'s record (.nodegen-manifest.json) that the full
//     run found equal to its render, or wrote.
//
// The record states a fact about a pure function: this binary, given these
// inputs and these source bytes, renders the files that record lists. The
// shortcut is taken only when all four still hold and out/ holds exactly
// what its record lists (outdir.Intact); then a full check would render
// the same files and compare them with the same bytes, so its answer is
// known: clean. Anything else, including a missing or unreadable record,
// falls back to the full check. The committed out/ is not involved: its
// record stays byte-identical whichever binary wrote it.
package fastcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/source"
)

// recordFormat is the version of the record's layout; a record of another
// format is not used (and is replaced after the next full run).
const recordFormat = 1

// Inputs are what a run renders from and compares with.
type Inputs struct {
	// Source and Out are the source and output directories as given.
	Source, Out string
	// Flags are the command's other flags that can change what is
	// rendered or where, as "name=value".
	Flags []string
	// CacheDir is where records are kept; "" means DefaultCacheDir.
	CacheDir string
	// Lock are the options for reading out/ under its lock.
	Lock outdir.Options
}

// record is what a full run leaves for the shortcut.
type record struct {
	Format int `json:"format"`
	// Out is the absolute output directory, for people reading the file.
	Out      string `json:"out"`
	Nodegen  string `json:"nodegen"`
	Inputs   string `json:"inputs"`
	Source   string `json:"source"`
	Manifest string `json:"manifest"`
}

// fingerprint identifies the running nodegen binary (tests replace it).
var fingerprint = sync.OnceValues(binaryFingerprint)

// DefaultCacheDir is $NODEGEN_CACHE_DIR, or nodegen/ in the user's cache
// directory (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache on Linux,
// ~/Library/Caches on macOS, %LocalAppData% on Windows).
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("NODEGEN_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "nodegen"), nil
}

// envPrefixes are the environment variables that are part of the inputs:
// nodegen's own, CUE's (CUE_EXPERIMENT, CUE_DEBUG, ...) and the Go
// runtime's behaviour switches.
var envPrefixes = []string{"NODEGEN_", "CUE_", "GODEBUG="}

// envIgnored are variables of those prefixes that cannot change a render.
var envIgnored = []string{"NODEGEN_LOCK_TIMEOUT"}

// inputsDigest is the digest of everything but the source files that a
// render and its comparison with out/ depend on.
func inputsDigest(in Inputs) (string, error) {
	src, err := filepath.Abs(in.Source)
	if err != nil {
		return "", err
	}
	out, err := filepath.Abs(in.Out)
	if err != nil {
		return "", err
	}
	parts := []string{"source=" + src, "out=" + out}
	flags := slices.Clone(in.Flags)
	slices.Sort(flags)
	for _, f := range flags {
		parts = append(parts, "flag:"+f)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(envIgnored, name) {
			continue
		}
		for _, p := range envPrefixes {
			if strings.HasPrefix(kv, p) {
				env = append(env, "env:"+kv)
				break
			}
		}
	}
	slices.Sort(env)
	parts = append(parts, env...)
	b, err := json.Marshal(parts) // unambiguous: every part quoted
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:]), nil
}

// recordPath is the file of out's record under cacheDir.
func recordPath(in Inputs) (string, string, error) {
	dir := in.CacheDir
	if dir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return "", "", fmt.Errorf("no cache directory: %w", err)
		}
		dir = d
	}
	out, err := filepath.Abs(in.Out)
	if err != nil {
		return "", "", err
	}
	h := sha256.Sum256([]byte(out))
	return filepath.Join(dir, "check", hex.EncodeToString(h[:16])+".json"), out, nil
}

// Fresh reports whether out/ is known to be what a full check would find
// current, without evaluating the source. When it is not, reason says
// which precondition failed (for --verbose and the tests); the caller
// then runs the full check.
func Fresh(in Inputs) (ok bool, reason string) {
	path, _, err := recordPath(in)
	if err != nil {
		return false, err.Error()
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, "no record of a full run for this output directory"
	}
	if err != nil {
		return false, "record unreadable: " + err.Error()
	}
	var r record
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return false, "record unreadable: " + err.Error()
	}
	if r.Format != recordFormat || r.Nodegen == "" || r.Inputs == "" || r.Source == "" || r.Manifest == "" {
		return false, fmt.Sprintf("record of format %d or incomplete", r.Format)
	}
	fp, err := fingerprint()
	if err != nil {
		return false, "cannot fingerprint nodegen: " + err.Error()
	}
	if fp != r.Nodegen {
		return false, "nodegen changed since the record"
	}
	inputs, err := inputsDigest(in)
	if err != nil {
		return false, err.Error()
	}
	if inputs != r.Inputs {
		return false, "flags, directories or environment changed since the record"
	}
	src, err := source.DigestDir(in.Source)
	if err != nil {
		return false, "source: " + err.Error()
	}
	if src != r.Source {
		return false, "source changed since the record"
	}
	manifest, why, err := outdir.Intact(in.Out, in.Lock)
	if err != nil {
		return false, err.Error()
	}
	if why != "" {
		return false, "output directory: " + why
	}
	if manifest != r.Manifest {
		return false, "output directory: " + outdir.ManifestName + " changed since the record"
	}
	return true, ""
}

// Record notes, after a full run found (check) or made (gen) out/ equal
// to the render of the source whose source.Digest is sourceDigest, that
// out/'s record with manifestDigest is that render. It writes atomically;
// readers see the old record or the new one.
func Record(in Inputs, sourceDigest, manifestDigest string) error {
	if sourceDigest == "" || manifestDigest == "" {
		return errors.New("nothing to record")
	}
	path, out, err := recordPath(in)
	if err != nil {
		return err
	}
	fp, err := fingerprint()
	if err != nil {
		return err
	}
	inputs, err := inputsDigest(in)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(record{Format: recordFormat, Out: out, Nodegen: fp, Inputs: inputs, Source: sourceDigest, Manifest: manifestDigest}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".record-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
