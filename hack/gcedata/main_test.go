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
	if err := run(filepath.Join(data, "machine-types.json"), filepath.Join(data, "zones.json"), filepath.Join(data, "accelerator-zones.csv"), out); err != nil {
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
	write := tempWriter(t, dir)
	zones := write("zones.json", `[{"name":"x-east1-b","region":"https://www.googleapis.com/compute/v1/projects/p/regions/x-east1"},{"name":"x-east1-a","region":"https://www.googleapis.com/compute/v1/projects/p/regions/x-east1"}]`)
	mt := write("mt.json", `[{"name":"q1-standard-12","guestCpus":12,"memoryMb":49152,"zone":"x-east1-a"},{"name":"q1-standard-12","guestCpus":12,"memoryMb":49152,"zone":"x-east1-b"},{"name":"q1-standard-4","guestCpus":4,"memoryMb":16384},{"name":"q1-old-2","guestCpus":2,"memoryMb":1,"deprecated":{"state":"OBSOLETE"}}]`)
	az := write("az.csv", "accelerator,region,zones,source\n")
	out := filepath.Join(dir, "out.go")
	if err := run(mt, zones, az, out); err != nil {
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
	if err := run(bad, zones, az, out); err == nil {
		t.Error("two shapes for one machine type were accepted")
	}
	names := []string{"g2-standard-96", "g2-standard-4", "g2-standard-12", "a2-highgpu-1g"}
	slices.SortFunc(names, naturalCompare)
	if !slices.Equal(names, []string{"a2-highgpu-1g", "g2-standard-4", "g2-standard-12", "g2-standard-96"}) {
		t.Errorf("natural order: %v", names)
	}
}

// TestAcceleratorZones converts a gcloud-shaped accelerator-types list
// (zone URLs, a TPU, an OBSOLETE type) into accelerator-zones.csv, which
// run then turns into the generated rows with their source and the "*"
// row that makes the live answer speak for every type and region; and it
// refuses hand-written rows that name a zone outside their region, have
// no source or are not NVIDIA types.
func TestAcceleratorZones(t *testing.T) {
	dir := t.TempDir()
	write := tempWriter(t, dir)
	zones := write("zones.json", `[{"name":"x-east1-a","region":"https://www.googleapis.com/compute/v1/projects/p/regions/x-east1"},{"name":"x-east1-b","region":"https://www.googleapis.com/compute/v1/projects/p/regions/x-east1"},{"name":"x-west2-c","region":"https://www.googleapis.com/compute/v1/projects/p/regions/x-west2"}]`)
	mt := write("mt.json", `[{"name":"q1-standard-4","guestCpus":4,"memoryMb":16384}]`)
	live := write("at.json", `[
{"name":"nvidia-l4","zone":"https://www.googleapis.com/compute/v1/projects/p/zones/x-east1-b","description":"NVIDIA L4"},
{"name":"nvidia-l4","zone":"https://www.googleapis.com/compute/v1/projects/p/zones/x-east1-a","description":"NVIDIA L4"},
{"name":"nvidia-tesla-t4","zone":"x-west2-c","description":"NVIDIA T4"},
{"name":"ct5lp","zone":"x-east1-a","description":"ct5lp"},
{"name":"nvidia-tesla-k80","zone":"x-east1-a","deprecated":{"state":"OBSOLETE"}}]`)
	az := filepath.Join(dir, "az.csv")
	if err := convertAcceleratorTypes(live, zones, "gcloud compute accelerator-types list, live API, 2026-12-07", az); err != nil {
		t.Fatal(err)
	}
	csvText, _ := os.ReadFile(az)
	wantCSV := `accelerator,region,zones,source
nvidia-l4,x-east1,x-east1-a x-east1-b,"gcloud compute accelerator-types list, live API, 2026-12-07"
nvidia-tesla-t4,x-west2,x-west2-c,"gcloud compute accelerator-types list, live API, 2026-12-07"
*,*,,"gcloud compute accelerator-types list, live API, 2026-12-07"
`
	if !bytes.HasSuffix(csvText, []byte(wantCSV)) || !bytes.HasPrefix(csvText, []byte("# ")) {
		t.Errorf("converted table:\n%s\nwant a comment, then:\n%s", csvText, wantCSV)
	}
	out := filepath.Join(dir, "out.go")
	if err := run(mt, zones, az, out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	for _, want := range []string{
		`{"*", "*", []string{}, "gcloud compute accelerator-types list, live API, 2026-12-07"},`,
		`{"nvidia-l4", "x-east1", []string{"x-east1-a", "x-east1-b"}, "gcloud compute accelerator-types list, live API, 2026-12-07"},`,
		`{"nvidia-tesla-t4", "x-west2", []string{"x-west2-c"}, "gcloud compute accelerator-types list, live API, 2026-12-07"},`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("generated file lacks %s:\n%s", want, b)
		}
	}
	if bytes.Contains(b, []byte("ct5lp")) || bytes.Contains(b, []byte("k80")) {
		t.Errorf("a TPU or an OBSOLETE type was kept:\n%s", b)
	}
	if err := convertAcceleratorTypes(write("far.json", `[{"name":"nvidia-l4","zone":"y-north9-a"}]`), zones, "src", az); err == nil {
		t.Error("a zone zones.json lacks was converted")
	}
	head := "accelerator,region,zones,source\n"
	for name, bad := range map[string]string{
		"zone of another region": head + "nvidia-l4,x-east1,x-east1-a x-west2-c,src\n",
		"unknown region":         head + "nvidia-l4,y-north9,y-north9-a,src\n",
		"no source":              head + "nvidia-l4,x-east1,x-east1-a,\n",
		"no zones":               head + "nvidia-l4,x-east1,,src\n",
		"not NVIDIA":             head + "ct5lp,x-east1,x-east1-a,src\n",
		"star with zones":        head + "*,*,x-east1-a,src\n",
		"half a star":            head + "*,x-east1,,src\n",
		"twice":                  head + "nvidia-l4,x-east1,x-east1-a,src\nnvidia-l4,x-east1,x-east1-b,src\n",
		"header":                 "type,region,zones,source\nnvidia-l4,x-east1,x-east1-a,src\n",
	} {
		if err := run(mt, zones, write("bad.csv", bad), out); err == nil {
			t.Errorf("%s: accepted:\n%s", name, bad)
		}
	}
}

// tempWriter returns a function that writes a file of the given name and
// contents into dir and returns its path.
func tempWriter(t *testing.T, dir string) func(name, s string) string {
	return func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
