package main

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// acceleratorZonesHeader is the first line of accelerator-zones.csv.
var acceleratorZonesHeader = []string{"accelerator", "region", "zones", "source"}

// acceleratorZonesComment opens accelerator-zones.csv.
const acceleratorZonesComment = `# The zones of a region that offer an NVIDIA accelerator type, by source
# (see SOURCES.md). Where a source lists a type in a region, nodegen vet
# refuses a group of that type in a zone no source lists there; where no
# source lists the type in the region, nodegen check --by-hand asks to
# confirm it. Accelerator and region "*": the source lists every zone of
# every type (the live API), so a pair it does not list is offered nowhere.
# zones: space-separated. hack/gcedata/refresh.sh replaces this file.
`

// acceleratorOffer is one row of accelerator-zones.csv.
type acceleratorOffer struct {
	accelerator, region string
	zones               []string
	source              string
}

// readAcceleratorZones reads accelerator-zones.csv and checks each row
// against the regions and zones of zones.json. Rows come back sorted by
// accelerator, region and source.
func readAcceleratorZones(file string, zones []zone) ([]acceleratorOffer, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	regionOf := map[string]string{}
	regions := map[string]bool{}
	for _, z := range zones {
		regionOf[z.Name] = path.Base(z.Region)
		regions[path.Base(z.Region)] = true
	}
	r := csv.NewReader(bytes.NewReader(b))
	r.Comment = '#'
	r.FieldsPerRecord = len(acceleratorZonesHeader)
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if !slices.Equal(head, acceleratorZonesHeader) {
		return nil, fmt.Errorf("%s: header %q, want %q", file, head, acceleratorZonesHeader)
	}
	var out []acceleratorOffer
	seen := map[[3]string]bool{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		line, _ := r.FieldPos(0)
		o := acceleratorOffer{accelerator: rec[0], region: rec[1], zones: strings.Fields(rec[2]), source: strings.TrimSpace(rec[3])}
		where := fmt.Sprintf("%s:%d", file, line)
		switch {
		case o.source == "":
			return nil, fmt.Errorf("%s: a row without its source", where)
		case (o.accelerator == "*") != (o.region == "*"):
			return nil, fmt.Errorf("%s: accelerator and region are \"*\" together (a source that lists every zone of every type) or not at all", where)
		case o.accelerator == "*" && len(o.zones) > 0:
			return nil, fmt.Errorf("%s: a \"*\" row lists no zones", where)
		case o.accelerator != "*" && !strings.HasPrefix(o.accelerator, "nvidia-"):
			return nil, fmt.Errorf("%s: accelerator type %q is not an NVIDIA GPU (nvidia-…)", where, o.accelerator)
		case o.accelerator != "*" && !regions[o.region]:
			return nil, fmt.Errorf("%s: region %q is not in zones.json", where, o.region)
		case o.accelerator != "*" && len(o.zones) == 0:
			return nil, fmt.Errorf("%s: no zones: a source that lists a type in no zone of a region lists every zone of every type (a \"*\" row)", where)
		}
		for _, z := range o.zones {
			if regionOf[z] != o.region {
				return nil, fmt.Errorf("%s: zone %s is not a zone of region %s in zones.json", where, z, o.region)
			}
		}
		key := [3]string{o.accelerator, o.region, o.source}
		if seen[key] {
			return nil, fmt.Errorf("%s: %s in %s from %q twice", where, o.accelerator, o.region, o.source)
		}
		seen[key] = true
		slices.Sort(o.zones)
		o.zones = slices.Compact(o.zones)
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b acceleratorOffer) int {
		return cmp.Or(cmp.Compare(a.accelerator, b.accelerator), cmp.Compare(a.region, b.region), cmp.Compare(a.source, b.source))
	})
	return out, nil
}

// acceleratorType is the part of a gcloud compute accelerator-types list
// --format=json row that matters here.
type acceleratorType struct {
	Name       string `json:"name"`
	Zone       string `json:"zone"` // a URL or a bare name
	Deprecated *struct {
		State string `json:"state"`
	} `json:"deprecated"`
}

// convertAcceleratorTypes writes accelerator-zones.csv from the live
// answer of gcloud compute accelerator-types list --format=json: one row
// per NVIDIA type and region, and a "*" row, since the answer lists every
// zone of every type the project can use.
func convertAcceleratorTypes(gcloudFile, zFile, source, out string) error {
	if strings.TrimSpace(source) == "" {
		return fmt.Errorf("-source is empty: name what was asked and when")
	}
	var types []acceleratorType
	if err := readJSON(gcloudFile, &types); err != nil {
		return err
	}
	var zones []zone
	if err := readJSON(zFile, &zones); err != nil {
		return err
	}
	regionOf := map[string]string{}
	for _, z := range zones {
		regionOf[z.Name] = path.Base(z.Region)
	}
	byPair := map[[2]string][]string{}
	for _, t := range types {
		if !strings.HasPrefix(t.Name, "nvidia-") {
			continue // TPUs and others: not nodegen's
		}
		if t.Deprecated != nil && (t.Deprecated.State == "OBSOLETE" || t.Deprecated.State == "DELETED") {
			continue
		}
		z := path.Base(t.Zone)
		r, ok := regionOf[z]
		if !ok {
			return fmt.Errorf("%s: %s in zone %q, which zones.json does not have: refresh both together", gcloudFile, t.Name, t.Zone)
		}
		k := [2]string{t.Name, r}
		if !slices.Contains(byPair[k], z) {
			byPair[k] = append(byPair[k], z)
		}
	}
	var b bytes.Buffer
	b.WriteString(acceleratorZonesComment)
	w := csv.NewWriter(&b)
	w.UseCRLF = false
	rows := [][]string{acceleratorZonesHeader}
	keys := make([][2]string, 0, len(byPair))
	for k := range byPair {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		zs := byPair[k]
		slices.Sort(zs)
		rows = append(rows, []string{k[0], k[1], strings.Join(zs, " "), source})
	}
	rows = append(rows, []string{"*", "*", "", source})
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}
