package issuer_test

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/scope"
)

// TestNAT64ClientsAreKeyedByTheirIPv4Address: behind an IPv6-only front
// end doing NAT64, every IPv4 client arrives as 64:ff9b::a.b.c.d. Keyed by
// the /64, they were one key: 120 wrong secrets from one host, then the
// right secret from another that never failed got 429. Keyed by the IPv4
// address each carries, the other host gets its token; so it does under
// a network-specific prefix the operator lists, and the guessing host
// stays refused.
func TestNAT64ClientsAreKeyedByTheirIPv4Address(t *testing.T) {
	for _, c := range []struct {
		name, attacker, other string
		prefixes              []netip.Prefix
	}{
		{"the well-known prefix", "64:ff9b::c000:201", "64:ff9b::c633:6401", nil},
		{"a listed /96", "64:ff9b:1::c000:201", "64:ff9b:1::c633:6401", []netip.Prefix{netip.MustParsePrefix("64:ff9b:1::/96")}},
		// /48: the IPv4 address in bits 48-63 and 72-87, the u octet (bits
		// 64-71) between: 192.0.2.1 and 198.51.100.1.
		{"a listed /48", "2001:db8:1:c000:2:100::", "2001:db8:1:c633:64:100::", []netip.Prefix{netip.MustParsePrefix("2001:db8:1::/48")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(cfg *issuer.Config) {
				cfg.Limits = limit.Config{FailedAttemptsPerSubject: 1000, FailedAttemptsPerAddress: 100,
					TrustedProxyHeader: "X-Forwarded-For", NAT64Prefixes: c.prefixes}
			})
			for i := range 120 {
				guess := form("grant_type", "client_credentials", "client_id", "admin", "client_secret", fmt.Sprint("guess-", i), "scope", scope.AdminWebAPI)
				post(t, s.tokenURL(), formType, guess, "X-Forwarded-For", c.attacker)
			}
			right := form("grant_type", "client_credentials", "client_id", "connect", "client_secret", connectSecret, "scope", scope.ConnectWebAPI)
			if a := post(t, s.tokenURL(), formType, right, "X-Forwarded-For", c.other); a.status != 200 {
				t.Errorf("another IPv4 host behind the translator, with its right secret: %d %s", a.status, a.raw)
			}
			if a := post(t, s.tokenURL(), formType, right, "X-Forwarded-For", c.attacker); a.status != 429 {
				t.Errorf("the guessing host: %d, want 429", a.status)
			}
		})
	}
}

// TestNAT64PrefixesAreChecked: a translator prefix must be IPv6, of one
// of RFC 6052's lengths; the error names the field, whether the file
// names it (and it cannot be read) or a Config built in code does.
func TestNAT64PrefixesAreChecked(t *testing.T) {
	for _, bad := range []string{"64:ff9b::/80", "192.0.2.0/24", "::ffff:0:0/96", "not a prefix"} {
		cfg, err := issuer.ParseConfig([]byte(`{"issuer":"http://h/ids","ephemeralKey":true,"clients":[],"limits":{"nat64Prefixes":["64:ff9b:1::/96","`+bad+`"]}}`), "", nil)
		if err == nil {
			_, err = issuer.New(cfg)
		}
		var ce *issuer.ConfigError
		if !errors.As(err, &ce) || ce.Field != "limits.nat64Prefixes" {
			t.Errorf("nat64Prefixes %q: %v, want a ConfigError for limits.nat64Prefixes", bad, err)
		}
		if p, perr := netip.ParsePrefix(bad); perr == nil {
			cfg := testConfig("http://h/ids")
			cfg.Limits.NAT64Prefixes = []netip.Prefix{netip.MustParsePrefix("64:ff9b:1::/96"), p}
			if _, err := issuer.New(cfg); !errors.As(err, &ce) || ce.Field != "limits.nat64Prefixes" {
				t.Errorf("NAT64Prefixes %v in code: %v, want a ConfigError for limits.nat64Prefixes", p, err)
			}
		}
	}
}
