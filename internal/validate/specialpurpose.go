package validate

import (
	_ "embed"
	"encoding/csv"
	"fmt"
	"net/netip"
	"strings"
	"sync"
)

// specialPurposeCSV is the IANA IPv4 Special-Purpose Address Registry
// (data/ipv4-special-purpose.csv says which version).
//
//go:embed data/ipv4-special-purpose.csv
var specialPurposeCSV string

// documentationRFC registers the documentation blocks, TEST-NET-1 to 3.
const documentationRFC = "RFC 5737"

// A specialBlock is one entry of the registry.
type specialBlock struct {
	prefix            netip.Prefix
	name, rfc         string
	globallyReachable bool
}

// specialBlocks parses the registry once.
var specialBlocks = sync.OnceValue(func() []specialBlock {
	r := csv.NewReader(strings.NewReader(specialPurposeCSV))
	r.Comment = '#'
	recs, err := r.ReadAll()
	if err != nil {
		panic(fmt.Sprintf("data/ipv4-special-purpose.csv: %v", err))
	}
	var out []specialBlock
	for _, rec := range recs {
		if len(rec) != 4 || (rec[3] != "true" && rec[3] != "false") {
			panic(fmt.Sprintf("data/ipv4-special-purpose.csv: bad record %q", rec))
		}
		p, err := netip.ParsePrefix(rec[0])
		if err != nil || p.Masked() != p {
			panic(fmt.Sprintf("data/ipv4-special-purpose.csv: bad block %q", rec[0]))
		}
		out = append(out, specialBlock{prefix: p, name: rec[1], rfc: rec[2], globallyReachable: rec[3] == "true"})
	}
	return out
})

// specialPurpose returns the most specific block of the registry that
// holds a, and whether there is one.
func specialPurpose(a netip.Addr) (specialBlock, bool) {
	var best specialBlock
	found := false
	for _, b := range specialBlocks() {
		if b.prefix.Contains(a) && (!found || b.prefix.Bits() > best.prefix.Bits()) {
			best, found = b, true
		}
	}
	return best, found
}
