package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGeneratedIsCurrent regenerates internal/gce/zz_generated.go from the
// committed JSON and compares it with the committed file.
func TestGeneratedIsCurrent(t *testing.T) {
	data := filepath.Join("..", "..", "internal", "gce", "data")
	out := filepath.Join(t.TempDir(), "zz_generated.go")
	if err := run(filepath.Join(data, "machine-types.json"), filepath.Join(data, "zones.json"), out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "internal", "gce", "zz_generated.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("internal/gce/zz_generated.go is stale: run go generate ./internal/gce")
	}
}

// TestMergesZonesAndRejectsConflicts feeds gcloud-shaped JSON listing a
// machine type in two zones (merged) and then with two shapes (an error).
func TestMergesZonesAndRejectsConflicts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	zones := write("zones.json", `[{"name":"x-east1-b","region":"https://www.googleapis.com/compute/v1/projects/p/regions/x-east1"},{"name":"x-east1-a","region":"https://www.googleapis.com/compute/v1/projects/p/regions/x-east1"}]`)
	mt := write("mt.json", `[{"name":"q1-standard-12","guestCpus":12,"memoryMb":49152,"zone":"x-east1-a"},{"name":"q1-standard-12","guestCpus":12,"memoryMb":49152,"zone":"x-east1-b"},{"name":"q1-standard-4","guestCpus":4,"memoryMb":16384},{"name":"q1-old-2","guestCpus":2,"memoryMb":1,"deprecated":{"state":"OBSOLETE"}}]`)
	out := filepath.Join(dir, "out.go")
	if err := run(mt, zones, out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	for _, want := range []string{`{"q1-standard-4", 4, 16384, false, "", 0},
	{"q1-standard-12", 12, 49152, false, "", 0},`, `"x-east1": {"x-east1-a", "x-east1-b"},`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("generated file lacks %s:\n%s", want, b)
		}
	}
	if bytes.Contains(b, []byte("q1-old-2")) {
		t.Error("an OBSOLETE machine type was kept")
	}
	bad := write("bad.json", `[{"name":"q1-standard-4","guestCpus":4,"memoryMb":16384},{"name":"q1-standard-4","guestCpus":4,"memoryMb":8192}]`)
	if err := run(bad, zones, out); err == nil {
		t.Error("two shapes for one machine type were accepted")
	}
	names := []string{"g2-standard-96", "g2-standard-4", "g2-standard-12", "a2-highgpu-1g"}
	slices.SortFunc(names, naturalCompare)
	if !slices.Equal(names, []string{"a2-highgpu-1g", "g2-standard-4", "g2-standard-12", "g2-standard-96"}) {
		t.Errorf("natural order: %v", names)
	}
}
