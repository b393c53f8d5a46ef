package clientip

import (
	"net/http"
	"net/netip"
	"testing"
)

// TestNAT64EmbeddedAddresses: RFC 6052 §2.4's own examples, 192.0.2.33
// under a prefix of each length, are keyed as 192.0.2.33 when the prefix
// is listed (and the well-known one always), and by their /64 when not.
func TestNAT64EmbeddedAddresses(t *testing.T) {
	for _, c := range []struct{ prefix, addr string }{
		{"2001:db8::/32", "2001:db8:c000:221::"},
		{"2001:db8:100::/40", "2001:db8:1c0:2:21::"},
		{"2001:db8:122::/48", "2001:db8:122:c000:2:2100::"},
		{"2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::"},
		{"2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0"},
		{"2001:db8:122:344::/96", "2001:db8:122:344::192.0.2.33"},
		{"64:ff9b::/96", "64:ff9b::192.0.2.33"},
	} {
		r := &http.Request{RemoteAddr: "[" + c.addr + "]:443"}
		listed := Resolver{NAT64: []netip.Prefix{netip.MustParsePrefix(c.prefix)}}
		if got := listed.Addr(r); got != "192.0.2.33" {
			t.Errorf("%s under %s: key %q, want 192.0.2.33", c.addr, c.prefix, got)
		}
		want := "192.0.2.33" // the well-known prefix needs no listing
		if c.prefix != "64:ff9b::/96" {
			p, _ := netip.MustParseAddr(c.addr).Prefix(64)
			want = p.String()
		}
		if got := (Resolver{}).Addr(r); got != want {
			t.Errorf("%s, no prefix listed: key %q, want %q", c.addr, got, want)
		}
	}
	if _, err := ParseNAT64([]string{"2001:db8::/33"}); err == nil {
		t.Error("a /33 translator prefix was accepted")
	}
}
