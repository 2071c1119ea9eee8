package revision

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"testing"
)

// The label scan and the header scan are plain byte searches; these
// references are the regular expression and the line-by-line reading
// they stand for.
var refLabelValue = regexp.MustCompile(regexp.QuoteMeta(Label) + `=[0-9a-f]*`)

func refWithoutHeader(script []byte) []byte {
	var out [][]byte
	for _, line := range bytes.SplitAfter(script, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if bytes.HasPrefix(t, []byte(headerPrefix)) && bytes.HasSuffix(t, []byte("DO NOT EDIT.")) {
			continue
		}
		out = append(out, line)
	}
	return bytes.Join(out, nil)
}

var scanSeeds = []string{
	"",
	"xodegen.dev/revision=ab nodegen.dex/revision=0 odegen.dev/revision=1 " + Label + "=cd",
	"a=" + Label + "=,b=1",
	"x " + Label + "=0123456789ab " + Label + "=ff" + Label + "=\n",
	Label + "=abcdefxyz" + Label + "=0" + Label,
	"#!/bin/bash\n# " + headerPrefix[2:] + "nodegroups/a.cue. DO NOT EDIT.\necho\n",
	"  " + headerPrefix + "x DO NOT EDIT.  \r\n" + headerPrefix + "y DO NOT EDIT.",
	"echo '" + headerPrefix + "x DO NOT EDIT.'\n\u00a0" + headerPrefix + "DO NOT EDIT.\u00a0\n" + headerPrefix + headerPrefix + "\n",
	headerPrefix + "DO NOT EDIT.\n\n" + headerPrefix,
}

// TestScanMatchesReference compares the scans with their references on
// the seeds and on random texts made of the pieces that matter.
func TestScanMatchesReference(t *testing.T) {
	for _, s := range scanSeeds {
		for _, rev := range []string{"", "0123456789ab", "ff"} {
			checkScan(t, []byte(s), rev)
		}
	}
	pieces := []string{Label, "=", Label + "=", "0", "a", "f", "g", "x", " ", "\t", "\n", "\r", "\u00a0", "#", headerPrefix, "DO NOT EDIT.", "nodegen.dev/", "/revision=", "dev/revision=", "nodegen.de"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b []byte
		for range rng.IntN(12) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		checkScan(t, b, "0123456789ab")
	}
}

func checkScan(t *testing.T, data []byte, rev string) {
	t.Helper()
	if got, want := Empty(data), refLabelValue.ReplaceAll(data, []byte(Label+"=")); !bytes.Equal(got, want) {
		t.Errorf("Empty(%q) = %q, want %q", data, got, want)
	}
	if got, want := Set(data, rev), refLabelValue.ReplaceAllLiteral(data, []byte(Label+"="+rev)); !bytes.Equal(got, want) {
		t.Errorf("Set(%q, %q) = %q, want %q", data, rev, got, want)
	}
	var n int
	labelValues(data, func(int, int) { n++ })
	if want := len(refLabelValue.FindAllIndex(data, -1)); n != want {
		t.Errorf("%q: %d labels, want %d", data, n, want)
	}
	if got, want := bytes.Join(cut(data, headerLines(data)), nil), refWithoutHeader(data); !bytes.Equal(got, want) {
		t.Errorf("the header lines cut from %q: %q, want %q", data, got, want)
	}
	// What the digest reads of a script, cut out of it in place: the
	// script with its labels emptied, then its header lines dropped.
	var values [][2]int
	for _, l := range labelRanges(data) {
		values = append(values, [2]int{l[0] + len(labelEq), l[1]})
	}
	if got, want := bytes.Join(cut(data, union(headerLines(data), values)), nil), refWithoutHeader(Empty(data)); !bytes.Equal(got, want) {
		t.Errorf("the digest's part of %q: %q, want %q", data, got, want)
	}
}
