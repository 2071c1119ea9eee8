package gce

import (
	_ "embed"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// cloudVPNCiphersCSV is Cloud VPN's supported IKEv2 ciphers
// (data/cloud-vpn-ike-ciphers.csv says from which page and date).
//
//go:embed data/cloud-vpn-ike-ciphers.csv
var cloudVPNCiphersCSV string

// An IKECipher is one cipher Cloud VPN supports for IKEv2.
type IKECipher struct {
	// AEAD: from the page's table of ciphers that use AEAD (an AES-GCM
	// cipher and no integrity algorithm); else from the one of those that
	// do not (an AES-CBC or 3DES cipher with one).
	AEAD bool
	// Phase 1 is the IKE SA's, phase 2 ESP's (the CHILD SA).
	Phase int
	// Role: "encryption", "integrity", "prf", "dh" (phase 1's
	// Diffie-Hellman group) or "pfs" (phase 2's group, which the page
	// says is required).
	Role string
	// Name is Google's name, Keyword strongSwan's for the same algorithm.
	Name, Keyword string
}

// CloudVPNCiphers returns the rows of the table, in the page's order.
var CloudVPNCiphers = sync.OnceValue(func() []IKECipher {
	r := csv.NewReader(strings.NewReader(cloudVPNCiphersCSV))
	r.Comment = '#'
	recs, err := r.ReadAll()
	if err != nil {
		panic(fmt.Sprintf("data/cloud-vpn-ike-ciphers.csv: %v", err))
	}
	var out []IKECipher
	for _, rec := range recs {
		if len(rec) != 5 {
			panic(fmt.Sprintf("data/cloud-vpn-ike-ciphers.csv: bad record %q", rec))
		}
		phase, err := strconv.Atoi(rec[1])
		if (rec[0] != "aead" && rec[0] != "cbc") || err != nil || phase < 1 || phase > 2 ||
			!slices.Contains([]string{"encryption", "integrity", "prf", "dh", "pfs"}, rec[2]) || rec[3] == "" || rec[4] == "" {
			panic(fmt.Sprintf("data/cloud-vpn-ike-ciphers.csv: bad record %q", rec))
		}
		out = append(out, IKECipher{AEAD: rec[0] == "aead", Phase: phase, Role: rec[2], Name: rec[3], Keyword: rec[4]})
	}
	return out
})

// CloudVPNKeywords returns strongSwan's keywords for the ciphers of one
// phase and role from one of the two tables (aead), in the page's order.
func CloudVPNKeywords(phase int, role string, aead bool) []string {
	var out []string
	for _, c := range CloudVPNCiphers() {
		if c.Phase == phase && c.Role == role && c.AEAD == aead && !slices.Contains(out, c.Keyword) {
			out = append(out, c.Keyword)
		}
	}
	return out
}

// CloudVPNCipher returns the rows for strongSwan's keyword kw in a phase
// (an algorithm may be in both tables: a PRF, a group).
func CloudVPNCipher(phase int, kw string) []IKECipher {
	var out []IKECipher
	for _, c := range CloudVPNCiphers() {
		if c.Phase == phase && c.Keyword == kw {
			out = append(out, c)
		}
	}
	return out
}
