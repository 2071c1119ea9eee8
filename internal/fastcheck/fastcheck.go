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
//     run found equal to its render, or wrote,
//   - once a shortcut check has read them: the stamp (size, mode, inode,
//     mtime, ctime; outdir.Stamp) and sha256 of each source and output
//     file last changed more than outdir.RacyWindow before, so that the
//     next check reads only the files whose stamp changed.
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
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nodegen/nodegen/internal/outdir"
	"github.com/nodegen/nodegen/internal/source"
)

// recordMagic starts a record and names its format; a record of another
// format is not used (and is replaced after the next full run).
const recordMagic = "nodegen check record, format 1"

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
	out      string // the absolute output directory, for people
	nodegen  string
	inputs   string
	source   string
	manifest string
	// src are stamps of source files, by name; seen is what the last
	// shortcut saw in out/ (nil before the first).
	src  map[string]outdir.Seen1
	seen *outdir.Seen
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
var envIgnored = []string{outdir.LockTimeoutEnv}

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

// recordPath is the file of out's record under the cache directory, and
// the absolute output directory.
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
	return filepath.Join(dir, "check", hex.EncodeToString(h[:16])), out, nil
}

// Fresh reports whether out/ is known to be what a full check would find
// current, without evaluating the source. When it is not, note says
// which precondition failed (for --verbose and the tests); the caller
// then runs the full check. When it is, note says how many files it read
// (the others it knew by their stamps); if it read files that can be
// stamped, it adds their stamps to the record for the next check.
func Fresh(in Inputs) (ok bool, note string) {
	now := time.Now()
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
	r, err := parseRecord(b)
	if err != nil {
		return false, "record unreadable: " + err.Error()
	}
	fp, err := fingerprint()
	if err != nil {
		return false, "cannot fingerprint nodegen: " + err.Error()
	}
	if fp != r.nodegen {
		return false, "nodegen changed since the record"
	}
	inputs, err := inputsDigest(in)
	if err != nil {
		return false, err.Error()
	}
	if inputs != r.inputs {
		return false, "flags, directories or environment changed since the record"
	}
	src, srcStamps, srcRead, srcTotal, err := sourceDigest(in.Source, r.src, now)
	if err != nil {
		return false, "source: " + err.Error()
	}
	if src != r.source {
		return false, "source changed since the record"
	}
	seen, why, err := outdir.Intact(in.Out, in.Lock, r.seen)
	if err != nil {
		return false, err.Error()
	}
	if why != "" {
		return false, "output directory: " + why
	}
	if seen.Manifest != r.manifest {
		return false, "output directory: " + outdir.ManifestName + " changed since the record"
	}
	if !sameStamps(r.src, srcStamps) || r.seen == nil || !sameStamps(r.seen.Files, seen.Files) {
		r.src, r.seen = srcStamps, seen
		r.write(path) // best effort: without it the next check reads again
	}
	return true, fmt.Sprintf("read %d of %d source files and %d of %d output files", srcRead, srcTotal, seen.Read, seen.Count)
}

// sourceDigest is source.Digest of dir's files as they are now. A file
// whose stamp is in known is not read: the content it had when stamped is
// its content. It returns the stamps of the files it may stand for next.
func sourceDigest(dir string, known map[string]outdir.Seen1, now time.Time) (digest string, stamps map[string]outdir.Seen1, read, total int, err error) {
	names, err := source.Files(dir)
	if err != nil {
		return "", nil, 0, 0, err
	}
	var d source.Digest
	stamps = map[string]outdir.Seen1{}
	for _, name := range names {
		info, err := os.Stat(filepath.Join(dir, name)) // follows a link, as Open does
		if err != nil {
			return "", nil, 0, 0, err
		}
		stamp, _ := outdir.Stamp(info, now)
		if k, ok := known[name]; ok && stamp != "" && k.Stamp == stamp {
			sum, err := hex.DecodeString(k.SHA256)
			if err == nil && len(sum) == sha256.Size {
				d.Add(name, [sha256.Size]byte(sum))
				stamps[name] = k
				continue
			}
		}
		read++
		b, after, err := source.ReadFile(dir, name)
		if err != nil {
			return "", nil, 0, 0, err
		}
		sum := sha256.Sum256(b)
		d.Add(name, sum)
		if a, ok := outdir.Stamp(after, now); ok && stamp != "" && a == stamp {
			stamps[name] = outdir.Seen1{Stamp: stamp, SHA256: hex.EncodeToString(sum[:])}
		}
	}
	return d.Sum(), stamps, read, len(names), nil
}

func sameStamps(a, b map[string]outdir.Seen1) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Record notes, after a full run found (check) or made (gen) out/ equal
// to the render of the source whose source.Digest is sourceDigest, that
// out/'s record with manifestDigest is that render. It writes atomically;
// readers see the old record or the new one.
func Record(in Inputs, sourceDigest, manifestDigest string) error {
	if sourceDigest == "" || manifestDigest == "" {
		return errors.New("nothing to record (a source file changed during the run?)")
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
	r := &record{out: out, nodegen: fp, inputs: inputs, source: sourceDigest, manifest: manifestDigest}
	// The stamps of the record replaced stay: each says what a file held
	// while it had that stamp, whichever run and binary read it (Intact
	// uses the output files' only under the out/ record they were seen
	// with).
	if b, err := os.ReadFile(path); err == nil {
		if old, err := parseRecord(b); err == nil {
			r.src, r.seen = old.src, old.seen
		}
	}
	return r.write(path)
}

// The record is text, one item a line, so that a check reads it quickly:
//
//	nodegen check record, format 1
//	out <absolute output directory>
//	nodegen <fingerprint>
//	inputs <digest>
//	source <digest>
//	manifest <digest>
//	seen <digest of the out/ record seen> <number of files it lists>
//	s <stamp> <sha256> <source file name>
//	o <stamp> <sha256> <output file path>
func (r *record) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nout %s\nnodegen %s\ninputs %s\nsource %s\nmanifest %s\n", recordMagic, r.out, r.nodegen, r.inputs, r.source, r.manifest)
	line := func(kind string, files map[string]outdir.Seen1) {
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if f := files[name]; !strings.ContainsAny(name, "\n\r") {
				fmt.Fprintf(&b, "%s %s %s %s\n", kind, f.Stamp, f.SHA256, name)
			}
		}
	}
	line("s", r.src)
	if r.seen != nil {
		fmt.Fprintf(&b, "seen %s %d\n", r.seen.Manifest, r.seen.Count)
		line("o", r.seen.Files)
	}
	return b.Bytes()
}

func parseRecord(b []byte) (*record, error) {
	r := &record{src: map[string]outdir.Seen1{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	if !sc.Scan() || sc.Text() != recordMagic {
		return nil, errors.New("not a record of this format")
	}
	fields := map[string]*string{"out": &r.out, "nodegen": &r.nodegen, "inputs": &r.inputs, "source": &r.source, "manifest": &r.manifest}
	for sc.Scan() {
		key, rest, _ := strings.Cut(sc.Text(), " ")
		switch key {
		case "s", "o":
			stamp, rest, ok1 := strings.Cut(rest, " ")
			sum, name, ok2 := strings.Cut(rest, " ")
			if !ok1 || !ok2 || stamp == "" || len(sum) != 2*sha256.Size || name == "" {
				return nil, fmt.Errorf("bad line %q", sc.Text())
			}
			if key == "s" {
				r.src[name] = outdir.Seen1{Stamp: stamp, SHA256: sum}
			} else if r.seen != nil {
				r.seen.Files[name] = outdir.Seen1{Stamp: stamp, SHA256: sum}
			} else {
				return nil, errors.New("output stamps without a seen line")
			}
		case "seen":
			digest, count, _ := strings.Cut(rest, " ")
			n, err := strconv.Atoi(count)
			if err != nil || digest == "" || r.seen != nil {
				return nil, fmt.Errorf("bad line %q", sc.Text())
			}
			r.seen = &outdir.Seen{Manifest: digest, Count: n, Files: map[string]outdir.Seen1{}}
		default:
			p, ok := fields[key]
			if !ok || *p != "" || rest == "" {
				return nil, fmt.Errorf("bad line %q", sc.Text())
			}
			*p = rest
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for key, p := range fields {
		if *p == "" {
			return nil, fmt.Errorf("no %s line", key)
		}
	}
	return r, nil
}

// write replaces the record at path atomically.
func (r *record) write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".record-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(r.encode()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
