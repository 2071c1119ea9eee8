package cli_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/cli"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// mutatedSources are the real sources FuzzVetMutations makes mistakes in:
// the tests' copy of the shipped example, and the tests' fleet (two
// clusters and their mesh).
var mutatedSources = []func() string{testsrc.ShippedCopyDir, testsrc.FleetDir}

// FuzzVetMutations makes two or three mistakes at once in a real source
// (testsrc.Mutate: a field renamed, given a value of another type or
// another field's value or an extreme number, or deleted) and holds vet to
// its promise for any combination of them: it never panics nor reports an
// internal error, it exits 0 or 1, and every line it prints is a finding
// at file:line:col.
func FuzzVetMutations(f *testing.F) {
	for _, s := range mutationSeeds(f) {
		f.Add(s.which, s.ops)
	}
	f.Fuzz(func(t *testing.T, which uint8, ops []byte) {
		ms := testsrc.Mutations(ops)
		if ms == nil {
			t.Skip("too short")
		}
		dir := filepath.Join(t.TempDir(), "src")
		did, err := testsrc.Mutate(mutatedSources[int(which)%len(mutatedSources)](), dir, ms)
		if err != nil {
			// A mutation the formatter cannot print is not a source.
			t.Skip(err)
		}
		var out, errb bytes.Buffer
		code := cli.Main([]string{"vet", "--source", dir}, strings.NewReader(""), &out, &errb)
		stderr := errb.String()
		if code != cli.ExitOK && code != cli.ExitFindings || strings.Contains(stderr, "internal error") {
			t.Fatalf("vet exits %d after\n%s\n%s", code, did, stderr)
		}
		if code == cli.ExitFindings && stderr == "" {
			t.Fatalf("vet refuses without a finding after\n%s", did)
		}
		for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
			if line != "" && !positioned.MatchString(line) {
				t.Fatalf("vet prints a line without a position after\n%s\n%s\nall of stderr:\n%s", did, line, stderr)
			}
		}
	})
}

type mutationSeed struct {
	which uint8
	ops   []byte
}

// mutationSeeds are mistakes made to named fields: the fuzz inputs that
// name them by index are found here, so that the seeds follow the
// sources. testdata/fuzz/FuzzVetMutations holds the same inputs as found
// when it was written.
func mutationSeeds(t testing.TB) []mutationSeed {
	idx := func(which int, path string) uint16 {
		i, err := testsrc.FieldIndex(mutatedSources[which](), path)
		if err != nil {
			t.Fatal(err)
		}
		return uint16(i)
	}
	rename, retype, del, swap, extreme := uint8(testsrc.MistakeRename), uint8(testsrc.MistakeRetype), uint8(testsrc.MistakeDelete), uint8(testsrc.MistakeSwap), uint8(testsrc.MistakeExtreme)
	g := `nodeGroups."gpu-t4".`
	return []mutationSeed{
		// zones written zone, and priority a string: vet once panicked.
		{0, testsrc.Encode(testsrc.Mutation{Mistake: rename, Field: idx(0, g+"zones")}, testsrc.Mutation{Mistake: retype, Field: idx(0, g+"priority")})},
		// The same with the group's max beyond 64 bits.
		{0, testsrc.Encode(testsrc.Mutation{Mistake: rename, Field: idx(0, g+"zones")}, testsrc.Mutation{Mistake: retype, Field: idx(0, g+"priority")}, testsrc.Mutation{Mistake: extreme, Field: idx(0, g+"max"), Param: 3})},
		// kind deleted and the taints a struct.
		{0, testsrc.Encode(testsrc.Mutation{Mistake: del, Field: idx(0, g+"kind")}, testsrc.Mutation{Mistake: retype, Field: idx(0, g+"taints"), Param: 2})},
		// In the fleet: a cluster's nodeGroups given the mesh's value, and
		// the mesh's id renamed.
		{1, testsrc.Encode(testsrc.Mutation{Mistake: swap, Field: idx(1, "clusters.train.nodeGroups"), Param: uint8(idx(1, "mesh"))}, testsrc.Mutation{Mistake: rename, Field: idx(1, "mesh.id"), Param: 1})},
	}
}
