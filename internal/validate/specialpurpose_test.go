package validate

import (
	"net/netip"
	"testing"
)

// TestSpecialPurposeTable holds the registry's data file to its form (it
// parses, every block masked) and to the blocks a VPN address must never
// be in, each found as the most specific block of an address inside it.
func TestSpecialPurposeTable(t *testing.T) {
	for addr, want := range map[string]string{
		"100.64.0.1":      "100.64.0.0/10",
		"100.127.255.254": "100.64.0.0/10",
		"240.0.0.1":       "240.0.0.0/4",
		"0.1.2.3":         "0.0.0.0/8",
		"0.0.0.0":         "0.0.0.0/32",
		"198.19.255.1":    "198.18.0.0/15",
		"192.0.0.100":     "192.0.0.0/24",
		"192.0.0.9":       "192.0.0.9/32",
		"10.1.2.3":        "10.0.0.0/8",
		"203.0.113.10":    "203.0.113.0/24",
	} {
		b, ok := specialPurpose(netip.MustParseAddr(addr))
		if !ok || b.prefix.String() != want {
			t.Errorf("%s: block %v (%v), want %s", addr, b.prefix, ok, want)
		}
	}
	for _, addr := range []string{"8.8.8.8", "100.128.0.1", "198.20.0.1", "192.0.1.1", "239.255.255.255"} {
		if b, ok := specialPurpose(netip.MustParseAddr(addr)); ok {
			t.Errorf("%s: in %v, want no block", addr, b.prefix)
		}
	}
}
