package clientip

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestAddr(t *testing.T) {
	trusted, err := ParsePrefixes([]string{"10.0.0.0/8", "2001:db8:ffff::1"})
	if err != nil {
		t.Fatal(err)
	}
	xff := Resolver{Header: "X-Forwarded-For"}
	behind := Resolver{Header: "X-Forwarded-For", Trusted: trusted}
	cases := []struct {
		name   string
		res    Resolver
		remote string
		header []string
		want   string
	}{
		{"IPv4 remote, port dropped", Resolver{}, "198.51.100.7:4711", nil, "198.51.100.7"},
		{"IPv6 remote grouped by /64", Resolver{}, "[2001:db8:1:2:3:4:5:6]:443", nil, "2001:db8:1:2::/64"},
		{"IPv4-mapped IPv6 is IPv4", Resolver{}, "[::ffff:198.51.100.7]:80", nil, "198.51.100.7"},
		{"zone dropped", Resolver{}, "[fe80::1%eth0]:80", nil, "fe80::/64"},
		{"garbage remote", Resolver{}, "not-an-address", nil, Invalid},
		{"header ignored when not configured", Resolver{}, "198.51.100.7:1", []string{"203.0.113.1"}, "198.51.100.7"},

		{"rightmost of the header", xff, "127.0.0.1:1", []string{"203.0.113.1, 203.0.113.2"}, "203.0.113.2"},
		{"last header line counts", xff, "127.0.0.1:1", []string{"203.0.113.1", "203.0.113.3"}, "203.0.113.3"},
		{"port in the header dropped", xff, "127.0.0.1:1", []string{"203.0.113.9:5555"}, "203.0.113.9"},
		{"bracketed IPv6 with port", xff, "127.0.0.1:1", []string{"[2001:db8::1]:5555"}, "2001:db8::/64"},
		{"empty header falls back to remote", xff, "198.51.100.7:1", []string{" , "}, "198.51.100.7"},
		{"garbage in the header is one key", xff, "127.0.0.1:1", []string{"<script>"}, Invalid},

		{"trusted hops are skipped", behind, "10.1.1.1:1", []string{"203.0.113.5, 10.2.2.2, 2001:db8:ffff::1"}, "203.0.113.5"},
		{"untrusted remote: header ignored", behind, "198.51.100.7:1", []string{"203.0.113.5"}, "198.51.100.7"},
		{"all trusted: remote", behind, "10.1.1.1:1", []string{"10.3.3.3"}, "10.1.1.1"},
		{"a Unix socket peer is a local proxy", behind, "@", []string{"203.0.113.6"}, "203.0.113.6"},
		{"a mapped trusted prefix matches", Resolver{Header: "X-Forwarded-For", Trusted: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}}, "10.1.1.1:1", []string{"203.0.113.7"}, "203.0.113.7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
			r.RemoteAddr = c.remote
			for _, h := range c.header {
				r.Header.Add("X-Forwarded-For", h)
			}
			if got := c.res.Addr(r); got != c.want {
				t.Fatalf("Addr = %q, want %q", got, c.want)
			}
		})
	}
}

// One IPv6 address written five ways, and one IPv4 address behind five
// ports, are one key each.
func TestOneAddressIsOneKey(t *testing.T) {
	res := Resolver{Header: "X-Forwarded-For"}
	spellings := [][]string{
		{"2001:db8:0:0:1::1", "2001:DB8::1:0:0:1", "[2001:db8::1:0:0:1]:1234", "2001:0db8:0000:0000:0001:0000:0000:0001", "2001:db8::1:0:0:99"},
		{"203.0.113.7:1", "203.0.113.7:2", "203.0.113.7:3", "203.0.113.7", "[::ffff:203.0.113.7]:9"},
	}
	for _, group := range spellings {
		keys := map[string]bool{}
		for _, s := range group {
			r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
			r.RemoteAddr = "127.0.0.1:1"
			r.Header.Set("X-Forwarded-For", s)
			keys[res.Addr(r)] = true
		}
		if len(keys) != 1 {
			t.Errorf("%v gave keys %v, want one", group, keys)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes([]string{"10.0.0.0/8", "192.0.2.1", "::ffff:192.0.2.2", "2001:db8::/32", "::ffff:10.0.0.0/104"})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32"),
		netip.MustParsePrefix("192.0.2.2/32"), netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("10.0.0.0/8"),
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "host.example", ""} {
		if _, err := ParsePrefixes([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCheckHeader(t *testing.T) {
	for _, h := range []string{"Forwarded", "forwarded", " Forwarded "} {
		if CheckHeader(h) == nil {
			t.Errorf("%q accepted", h)
		}
	}
	for _, h := range []string{"X-Forwarded-For", "X-Real-IP", ""} {
		if err := CheckHeader(h); err != nil {
			t.Errorf("%q refused: %v", h, err)
		}
	}
}

// FuzzKeyIsCanonical: whatever the text, an address's key is the one its
// netip form gives, so a plain IPv4 address kept as written is canonical.
func FuzzKeyIsCanonical(f *testing.F) {
	for _, s := range []string{"198.51.100.7:4711", "198.51.100.7", "[198.51.100.7]", "198.051.100.7", "1.2.3.4:", "[::ffff:1.2.3.4]:1", "::ffff:1.2.3.4", "1.2.3.4%eth0", "[1.2.3.4]:80", "0.0.0.0:0", "255.255.255.255"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, text := parse(s)
		var want string
		switch {
		case !a.IsValid():
			want = Invalid
		case a.Is4():
			want = a.String()
		default:
			p, _ := a.Prefix(64)
			want = p.String()
		}
		if got := key(a, text); got != want {
			t.Fatalf("%q: key %q, want %q", s, got, want)
		}
	})
}
