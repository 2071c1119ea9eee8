package verify

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// exampleTerraform is the Terraform files of the cloud groups of the
// tests' example with one group more, gpu-t4's twin in other zones and
// with another disk, description, size and taint (a group of gpu-t4's
// shape), by group.
func exampleTerraform(t testing.TB) (names []string, files [][]byte) {
	t.Helper()
	twin := `nodeGroups: "gpu-t4-twin": {
	kind:        "gce"
	description: "The twin: T4 GPU workers"
	zones: ["us-central1-c", "us-central1-f"]
	machineType:    "n1-standard-16"
	image:          "projects/acme-hybrid-ai/global/images/family/k8s-node-gpu-1-35-b"
	bootDiskSizeGb: 350
	min:            1
	max:            7
	gpu: {type: "nvidia-tesla-t4", count: 2}
	labels: {
		"example.com/pool":     "gpu-twin"
		"example.com/location": "cloud"
	}
	taints: [{key: "example.com/twin", value: "yes", effect: "NoSchedule"}]
	kubelet: systemReserved: {cpu: "200m", memory: "1Gi"}
	autoscaling: {
		scaleDownUnneededTime: "10m"
		maxNodeProvisionTime:  "25m"
	}
}
`
	src, out := testsrc.Render(t, testsrc.Copy(t, map[string]string{"gpu-t4-twin.cue": twin}))
	for _, g := range src.CloudGroups() {
		names = append(names, g.Name)
		files = append(files, out[layout.TerraformGroupPath(g.Name)])
	}
	return names, files
}

// examplePool reads the example's files by segments into a new pool.
func examplePool(t testing.TB, files [][]byte) *tfShapes {
	t.Helper()
	var s tfShapes
	for _, d := range files {
		if _, _, ok := s.segments(d); !ok {
			t.Fatalf("the example's file does not read by segments:\n%s", d)
		}
	}
	return &s
}

// clone is a pool with the same references, so that what a test reads
// does not change the pool it reads the next file with.
func (s *tfShapes) clone() *tfShapes { return &tfShapes{segs: slices.Clone(s.segs)} }

// fullRead is a file as the parser reads it in full: its diagnostics and
// its template read back.
func fullRead(data []byte) (tfRead, error, hcl.Diagnostics) {
	f, diags := hclsyntax.ParseConfig(data, "g.tf", hcl.InitialPos)
	if diags.HasErrors() {
		return tfRead{}, diags, diags
	}
	var blocks []tfBlock
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		blocks = append(blocks, tfBlock{block: b})
	}
	var out tfRead
	out.template, out.rendered, out.err = readTemplate(blocks)
	return out, out.err, diags
}

// sameRead tells whether two reads of a file found the same template.
func sameRead(a, b tfRead) bool {
	return reflect.DeepEqual(a.template, b.template) && slices.Equal(a.rendered, b.rendered)
}

// tfSameAsParse holds the reading of data by segments to hclsyntax's:
// when data reads by segments, the parser parses it without a
// diagnostic, the facts the capacity check reads are the parser's, and
// the scanner reads each segment that matched a reference as the
// reference's tokens (the same types; the same bytes but at the leaves,
// where it reads the match's values). It returns the segments that
// matched, and whether data read by segments.
func tfSameAsParse(t testing.TB, s *tfShapes, data []byte) ([]tfMatch, bool) {
	t.Helper()
	got, matched, ok := s.segments(data)
	if !ok {
		return nil, false
	}
	want, err, diags := fullRead(data)
	if len(diags) > 0 {
		t.Fatalf("the file reads by segments, and the parser reads it with %v:\n%s", diags, data)
	}
	if !sameRead(got, want) || fmt.Sprint(got.err) != fmt.Sprint(err) {
		t.Fatalf("by segments %+v (%v), the parser %+v (%v):\n%s", got.template, got.err, want.template, err, data)
	}
	lines := splitLines(data)
	for _, m := range matched {
		r := m.seg
		segment := func(ls [][]byte) []byte {
			b := bytes.Join(ls, []byte{'\n'})
			if r.block != nil {
				b = append(b, '\n')
			}
			return b
		}
		want, _ := hclsyntax.LexConfig(segment(r.lines), "", hcl.InitialPos)
		have, d := hclsyntax.LexConfig(segment(lines[m.line:m.line+len(r.lines)]), "", hcl.InitialPos)
		if d.HasErrors() || len(have) != len(want) {
			t.Fatalf("a segment that matched at line %d reads as %d tokens (%v), its reference %d:\n%s", m.line+1, len(have), d, len(want), data)
		}
		leafAt := map[int]tfLeaf{}
		for _, f := range r.all {
			leafAt[f.offset] = f
		}
		for i := range want {
			w, g := want[i], have[i]
			if w.Type != g.Type {
				t.Fatalf("line %d on, token %d: %s, the reference's %s:\n%s", m.line+1, i, g.Type, w.Type, data)
			}
			wb := w.Bytes
			if f, ok := leafAt[w.Range.Start.Byte]; ok && f.kind != tfComment {
				wb = []byte(m.vals[f.index])
			} else if w.Type == hclsyntax.TokenComment {
				skip := 1
				if bytes.HasPrefix(w.Bytes, []byte("//")) {
					skip = 2
				}
				if f, ok := leafAt[w.Range.Start.Byte+skip]; ok {
					wb = slices.Concat(w.Bytes[:skip], []byte(m.vals[f.index]), w.Bytes[skip+f.end-f.start:])
				}
			}
			if !bytes.Equal(g.Bytes, wb) {
				t.Fatalf("line %d on, token %d (%s): %q, want %q:\n%s", m.line+1, i, g.Type, g.Bytes, wb, data)
			}
		}
	}
	return matched, true
}

// TestTerraformShapeIsParse holds the reading by segments to hclsyntax:
// every file it reads, the scanner and the parser read alike. The files
// are the example's, and random changes of them: inside the free leaves
// of segments that matched (with the bytes that end a leaf or start a
// template sequence among those put in), and anywhere.
func TestTerraformShapeIsParse(t *testing.T) {
	names, files := exampleTerraform(t)
	pool := examplePool(t, files)
	kinds := map[tfLeafKind]int{}
	for _, r := range pool.segs {
		for _, l := range r.all {
			kinds[l.kind]++
		}
	}
	for _, k := range []tfLeafKind{tfQuoted, tfIdent, tfDigits, tfComment} {
		if kinds[k] == 0 {
			t.Errorf("no leaf of kind %d in the example's files", k)
		}
	}
	// The twin is gpu-t4's shape: read after it, nothing of it is
	// parsed.
	var s tfShapes
	for i, d := range files {
		before := len(s.segs)
		matched, ok := tfSameAsParse(t, &s, d)
		if !ok {
			t.Fatalf("%s's file does not read by segments", names[i])
		}
		if names[i] == "gpu-t4-twin" && len(s.segs) != before {
			t.Errorf("gpu-t4-twin: %d segments parsed (%d matched), want none: it is gpu-t4's shape", len(s.segs)-before, len(matched))
		}
	}

	rng, randBytes := randomBytes(t, "a0 9_-.\"#$%{}\\\n\t/*=,]):\r\x00\xc3\xa9\xff")
	runs := changeRuns(4000)
	taken := map[string]int{}
	for range runs {
		file := files[rng.IntN(len(files))]
		_, all, _ := pool.clone().segments(file)
		var matched []tfMatch
		for _, m := range all {
			if len(m.seg.all) > 0 {
				matched = append(matched, m)
			}
		}
		lines := splitLines(file)
		kind, at := "anywhere", -1
		if rng.IntN(3) > 0 {
			kind = "leaf"
			m := matched[rng.IntN(len(matched))]
			f := m.seg.all[rng.IntN(len(m.seg.all))]
			var mid []byte
			switch {
			case f.kind == tfDigits && rng.IntN(2) == 0:
				mid = []byte{byte('0' + rng.IntN(10)), byte('0' + rng.IntN(10))}
			case f.kind == tfIdent && rng.IntN(2) == 0:
				mid = slices.Concat([]byte{byte('a' + rng.IntN(26))}, bytes.Map(func(c rune) rune {
					if !isIdentByte(byte(c)) {
						return '-'
					}
					return c
				}, randBytes(rng.IntN(8))))
			case rng.IntN(2) == 0:
				mid = bytes.Map(func(c rune) rune {
					if c == '"' || c == '\n' || c == '$' || c == '%' || c == '\\' {
						return 'x'
					}
					return c
				}, randBytes(1+rng.IntN(12)))
			default:
				mid = randBytes(rng.IntN(12))
			}
			// The reference's own lines in the segment's place, then the
			// leaf changed in them.
			copy(lines[m.line:], m.seg.lines)
			at = m.line + leafLine(m.seg, f)
			lines[at] = slices.Concat(lines[at][:f.start], mid, lines[at][f.end:])
		}
		changed := bytes.Join(lines, []byte{'\n'})
		if kind == "anywhere" {
			p := rng.IntN(len(changed))
			at = bytes.Count(changed[:p], []byte{'\n'})
			changed = slices.Concat(changed[:p], randBytes(rng.IntN(3)), changed[min(p+rng.IntN(3), len(changed)):])
		}
		if bytes.Equal(changed, file) {
			continue
		}
		if matched, ok := tfSameAsParse(t, pool.clone(), changed); ok {
			for _, m := range matched {
				if m.line <= at && at < m.line+len(m.seg.lines) {
					taken[kind]++
					break
				}
			}
		}
	}
	t.Logf("changed files read by a reference at the change: %v", taken)
	for _, kind := range []string{"leaf", "anywhere"} {
		if taken[kind] < runs/80 {
			t.Errorf("%d files changed %s were read by a reference at the change: too few to hold the match to the parser", taken[kind], kind)
		}
	}
}

// leafLine is the index of the line of leaf f in its segment.
func leafLine(r *tfSeg, f tfLeaf) int {
	for i, leaves := range r.leaves {
		for _, l := range leaves {
			if l.index == f.index {
				return i
			}
		}
	}
	return -1
}

// FuzzTerraformShape holds the reading by segments to hclsyntax on any
// file, with the example's files' segments as references.
func FuzzTerraformShape(f *testing.F) {
	_, files := exampleTerraform(f)
	for _, d := range files {
		f.Add(d)
	}
	pool := examplePool(f, files)
	f.Fuzz(func(t *testing.T, data []byte) {
		tfSameAsParse(t, pool.clone(), data)
	})
}

// TestTerraformShapesRead: tfShapes reads each file as the parser does
// (the same facts, no diagnostic), and parses only the segments of a
// shape it has not seen; a changed Spot setting is read as changed; a
// file the parser refuses gets the parser's diagnostics; a file with an
// attribute at the top level or a byte-order mark is parsed in full.
func TestTerraformShapesRead(t *testing.T) {
	_, files := exampleTerraform(t)
	var s tfShapes
	spot, parsed := 0, 0
	for round := range 2 {
		for _, d := range files {
			got := s.read(d, "g.tf")
			want, err, diags := fullRead(d)
			if got.diags.HasErrors() || diags.HasErrors() {
				t.Fatalf("diagnostics %v and %v", got.diags, diags)
			}
			if !sameRead(got, want) || got.err != nil || err != nil {
				t.Fatalf("template %+v (%v), want %+v (%v)", got.template, got.err, want.template, err)
			}
			if want.template.Properties.Scheduling.ProvisioningModel == model.ProvisioningSpot {
				spot++
			}
		}
		if round == 0 {
			parsed = len(s.segs)
		}
	}
	if spot == 0 {
		t.Fatal("no Spot group in the example")
	}
	if parsed == 0 || len(s.segs) != parsed {
		t.Errorf("the first reading of %d files parsed %d segments, the second %d more: want some, then none", len(files), parsed, len(s.segs)-parsed)
	}
	const spotLine = `provisioning_model          = "SPOT"`
	for _, d := range files {
		if !bytes.Contains(d, []byte(spotLine)) {
			continue
		}
		changed := bytes.Replace(d, []byte(spotLine), []byte(`provisioning_model          = "STANDARD"`), 1)
		if got := s.read(changed, "g.tf"); got.err != nil || got.template.Properties.Scheduling.ProvisioningModel != "STANDARD" {
			t.Errorf("a changed provisioning model read as %+v (%v)", got.template, got.err)
		}
	}
	for name, d := range map[string][]byte{
		"a block left open":          slices.Concat(files[0], []byte("resource \"x\" {\n")),
		"an attribute at the top":    slices.Concat([]byte("x = 1\n"), files[0]),
		"a byte-order mark":          slices.Concat([]byte("\xef\xbb\xbf"), files[0]),
		"a heredoc holding a } line": slices.Concat([]byte("locals {\n  x = <<EOT\n}\nEOT\n}\n"), files[0]),
	} {
		got := s.clone().read(d, "g.tf")
		want, err, diags := fullRead(d)
		if fmt.Sprint(got.diags) != fmt.Sprint(diags) || !sameRead(got, want) || fmt.Sprint(got.err) != fmt.Sprint(err) {
			t.Errorf("%s: %+v (%v, %v), the parser %+v (%v, %v)", name, got.template, got.err, got.diags, want.template, err, diags)
		}
		if _, _, ok := s.clone().segments(d); ok && name != "a heredoc holding a } line" {
			t.Errorf("%s: read by segments", name)
		}
	}
}
