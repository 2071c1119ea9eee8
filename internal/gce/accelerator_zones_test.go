package gce

import (
	"slices"
	"testing"
)

// TestAcceleratorOffered reads the table as vet does: the zones are the
// union of the sources that list the type in the region; a -vws type
// counts its base type's zones where a source lists the -vws type in the
// region; a pair no source lists is unknown, unless a source lists every
// zone of every type (a "*" row, the live API's answer), which makes it
// offered nowhere.
func TestAcceleratorOffered(t *testing.T) {
	saved := generatedAcceleratorZones
	t.Cleanup(func() { generatedAcceleratorZones = saved })
	generatedAcceleratorZones = []generatedAcceleratorOffer{
		{"nvidia-l4", "x-east1", []string{"x-east1-a", "x-east1-b"}, "page, 2026-02-05"},
		{"nvidia-l4", "x-east1", []string{"x-east1-b", "x-east1-c"}, "catalog, 2025"},
		{"nvidia-l4-vws", "x-east1", []string{"x-east1-a"}, "capture, undated"},
		{"nvidia-l4", "x-west2", []string{"x-west2-a"}, "page, 2026-02-05"},
	}
	check := func(acc, region string, wantOK bool, wantZones, wantSources []string) {
		t.Helper()
		o, ok := AcceleratorOffered(acc, region)
		if ok != wantOK || !slices.Equal(o.Zones, wantZones) || !slices.Equal(o.Sources, wantSources) {
			t.Errorf("AcceleratorOffered(%s, %s) = %v, %v; want %v, %v, %v", acc, region, o, ok, wantOK, wantZones, wantSources)
		}
	}
	check("nvidia-l4", "x-east1", true, []string{"x-east1-a", "x-east1-b", "x-east1-c"}, []string{"catalog, 2025", "page, 2026-02-05"})
	check("nvidia-l4-vws", "x-east1", true, []string{"x-east1-a", "x-east1-b", "x-east1-c"}, []string{"capture, undated", "catalog, 2025", "page, 2026-02-05"})
	check("nvidia-l4-vws", "x-west2", false, nil, nil) // only the base type is listed there
	check("nvidia-tesla-t4", "x-east1", false, nil, nil)
	check("nvidia-l4", "y-north9", false, nil, nil)

	generatedAcceleratorZones = append(generatedAcceleratorZones, generatedAcceleratorOffer{"*", "*", nil, "live, 2026-12-07"})
	check("nvidia-tesla-t4", "x-east1", true, nil, []string{"live, 2026-12-07"})
	check("nvidia-l4", "x-west2", true, []string{"x-west2-a"}, []string{"live, 2026-12-07", "page, 2026-02-05"})
}

// TestAcceleratorZonesTable checks the committed table where the shipped
// examples and docs rely on it: T4 in all four us-central1 zones, A100
// (40GB) in europe-west4 a and b only, L4 unknown in europe-west9 (no
// source lists it there). Each type of the table is one nodegen knows.
func TestAcceleratorZonesTable(t *testing.T) {
	if o, ok := AcceleratorOffered("nvidia-tesla-t4", "us-central1"); !ok || !slices.Equal(o.Zones, []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"}) {
		t.Errorf("T4 in us-central1: %v, %v", o, ok)
	}
	if o, ok := AcceleratorOffered("nvidia-tesla-a100", "europe-west4"); !ok || !slices.Equal(o.Zones, []string{"europe-west4-a", "europe-west4-b"}) {
		t.Errorf("A100 in europe-west4: %v, %v", o, ok)
	}
	if o, ok := AcceleratorOffered("nvidia-l4", "europe-west9"); ok {
		t.Errorf("L4 in europe-west9: %v, want unknown", o)
	}
	for _, r := range generatedAcceleratorZones {
		if _, ok := Accelerator(r.accelerator); !ok && r.accelerator != "*" {
			t.Errorf("the table lists %s, which nodegen does not know", r.accelerator)
		}
	}
}

func TestAcceleratorZonesCommand(t *testing.T) {
	got := AcceleratorZonesCommand("nvidia-l4", []string{"europe-west9-a", "europe-west9-b"})
	if want := `gcloud compute accelerator-types list --filter="name=nvidia-l4 AND zone:( europe-west9-a europe-west9-b )"`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
