package gce

import (
	"slices"
	"strings"
	"testing"
)

// TestCloudVPNCiphers holds the transcription of Google's page to what it
// says: both IKEv2 tables, phase 2 with HMAC-SHA2-256-128, -512-256 and
// HMAC-SHA1-96 only, the same groups for phase 1 and for PFS, no MODP 6144
// and no short AES-GCM ICVs.
func TestCloudVPNCiphers(t *testing.T) {
	if n := len(CloudVPNCiphers()); n != 89 {
		t.Errorf("%d rows, want 89", n)
	}
	for _, c := range []struct {
		phase int
		role  string
		aead  bool
		want  string
	}{
		{1, "encryption", true, "aes128gcm16 aes192gcm16 aes256gcm16"},
		{2, "encryption", true, "aes128gcm16 aes256gcm16 aes192gcm16"},
		{1, "encryption", false, "aes128 aes192 aes256 3des"},
		{2, "encryption", false, "aes128 aes256 aes192"},
		{1, "integrity", false, "aesxcbc aescmac sha1 md5 sha256 sha384 sha512"},
		{2, "integrity", false, "sha256 sha512 sha1"},
		{1, "integrity", true, ""},
		{2, "prf", false, ""},
		{1, "prf", true, "prfaesxcbc prfaescmac prfsha1 prfmd5 prfsha256 prfsha384 prfsha512"},
	} {
		if got := strings.Join(CloudVPNKeywords(c.phase, c.role, c.aead), " "); got != c.want {
			t.Errorf("phase %d %s (AEAD %v): %q, want %q", c.phase, c.role, c.aead, got, c.want)
		}
	}
	dh := CloudVPNKeywords(1, "dh", false)
	if len(dh) != 13 || slices.Contains(dh, "modp6144") {
		t.Errorf("phase 1 groups %v: want the page's 13, without modp6144", dh)
	}
	for _, aead := range []bool{true, false} {
		if !slices.Equal(CloudVPNKeywords(1, "dh", aead), dh) || !slices.Equal(CloudVPNKeywords(2, "pfs", aead), dh) {
			t.Errorf("AEAD %v: the groups of phase 1 and for PFS differ from %v", aead, dh)
		}
	}
	if got := CloudVPNCipher(2, "sha384"); len(got) != 0 {
		t.Errorf("sha384 in phase 2: %+v", got)
	}
	if got := CloudVPNCipher(1, "sha384"); len(got) != 1 || got[0].Name != "HMAC-SHA2-384-192" {
		t.Errorf("sha384 in phase 1: %+v", got)
	}
}
