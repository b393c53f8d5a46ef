// Package clientip finds the address a request came from, in the form the
// failure limiters key on: one address is one key, however it is written.
//
// IPv4 addresses are kept whole; IPv6 addresses are grouped by their /64
// prefix, the smallest block one subscriber is usually given, so an
// attacker cannot turn one connection into 2^64 keys. A port, an IPv6 zone
// and the IPv4-mapped IPv6 form are dropped. An IPv6 address that embeds
// an IPv4 one (RFC 6052: a NAT64 or SIIT translator's, under the
// well-known prefix 64:ff9b::/96 or a prefix the operator lists) is the
// IPv4 address it carries: behind an IPv6-only front end every IPv4 client
// arrives so, and keyed by its /64 they would all be one key.
package clientip

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver finds a request's client address. The zero value uses
// RemoteAddr only, which is right for a server that clients reach
// directly.
type Resolver struct {
	// Header, when set (e.g. "X-Forwarded-For"), is read for the client
	// address: a comma-separated list that each proxy appends to.
	Header string
	// Trusted are the proxies whose additions to Header are believed.
	// Empty means one trusted hop: the header's rightmost address, which
	// the proxy in front of this server added. Otherwise the header is
	// read only when RemoteAddr is in Trusted (so a client reaching the
	// server directly cannot choose its address), and the address taken
	// is the rightmost one not in Trusted: the last hop no trusted proxy
	// vouches for. A peer with no IP address (a Unix socket) is a local
	// proxy, and trusted.
	Trusted []netip.Prefix
	// NAT64 are the prefixes (RFC 6052 §2.2: /32, /40, /48, /56, /64 or
	// /96) of the translators in front of the server, whose addresses
	// carry an IPv4 client's address: such an address is keyed as that
	// IPv4 address. The well-known prefix 64:ff9b::/96 is always one;
	// list a network-specific prefix (RFC 8215's 64:ff9b:1::/48 holds
	// local ones) with the length the translator uses. Only a translator
	// should source these addresses: a host that can send from inside one
	// could choose its key, as it could with any address it can spoof.
	NAT64 []netip.Prefix
}

// WellKnownNAT64 is RFC 6052's well-known prefix: addresses in it carry an
// IPv4 address in their last 32 bits.
var WellKnownNAT64 = netip.MustParsePrefix("64:ff9b::/96")

// Invalid is the key of an address that cannot be parsed. They all share
// it, so garbage cannot mint keys.
const Invalid = "invalid"

// Addr returns the client address of r, normalised: IPv4 as it is, IPv6
// as its /64 prefix, Invalid when it cannot be parsed.
func (res Resolver) Addr(r *http.Request) string {
	remote, text := parse(r.RemoteAddr)
	if res.Header == "" {
		return res.key(remote, text)
	}
	if len(res.Trusted) > 0 && remote.IsValid() && !res.trusted(remote) {
		return res.key(remote, text)
	}
	values := r.Header.Values(res.Header)
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for v != "" {
			var part string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				part, v = v[j+1:], v[:j]
			} else {
				part, v = v, ""
			}
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			a, text := parse(part)
			if len(res.Trusted) > 0 && a.IsValid() && res.trusted(a) {
				continue
			}
			return res.key(a, text)
		}
	}
	return res.key(remote, text)
}

// key is the limiter's key for a, whose text parse gave: the embedded
// IPv4 address of a translator's address, else a's own key.
func (res Resolver) key(a netip.Addr, text string) string {
	if a.Is6() {
		if v4, ok := embedded(a, WellKnownNAT64); ok {
			return v4.String()
		}
		for _, p := range res.NAT64 {
			if v4, ok := embedded(a, p); ok {
				return v4.String()
			}
		}
	}
	return key(a, text)
}

// embedded returns the IPv4 address that a, in the translator prefix p,
// carries (RFC 6052 §2.2): the 32 bits after the prefix, skipping bits 64
// to 71 (the "u" octet).
func embedded(a netip.Addr, p netip.Prefix) (netip.Addr, bool) {
	if !p.Contains(a) {
		return netip.Addr{}, false
	}
	b := a.As16()
	var v4 [4]byte
	switch p.Bits() {
	case 32:
		copy(v4[:], b[4:8])
	case 40:
		copy(v4[:3], b[5:8])
		v4[3] = b[9]
	case 48:
		copy(v4[:2], b[6:8])
		copy(v4[2:], b[9:11])
	case 56:
		v4[0] = b[7]
		copy(v4[1:], b[9:12])
	case 64:
		copy(v4[:], b[9:13])
	case 96:
		copy(v4[:], b[12:16])
	default:
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(v4), true
}

// ParseNAT64 reads translator prefixes for Resolver.NAT64: IPv6 CIDR
// prefixes of RFC 6052's lengths (32, 40, 48, 56, 64 or 96 bits).
func ParseNAT64(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))
	for i, s := range in {
		p, err := netip.ParsePrefix(s)
		if err == nil {
			err = CheckNAT64(p)
		}
		if err != nil {
			return nil, fmt.Errorf("[%d]: %v", i, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// CheckNAT64 refuses a prefix that is not a translator's: an IPv6 prefix
// of /32, /40, /48, /56, /64 or /96 bits (RFC 6052 §2.2).
func CheckNAT64(p netip.Prefix) error {
	if !p.Addr().Is6() || p.Addr().Is4In6() {
		return fmt.Errorf("%s is not an IPv6 prefix", p)
	}
	switch p.Bits() {
	case 32, 40, 48, 56, 64, 96:
		return nil
	}
	return fmt.Errorf("%s: a translator prefix is /32, /40, /48, /56, /64 or /96 (RFC 6052 §2.2)", p)
}

func (res Resolver) trusted(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range res.Trusted {
		if unmap(p).Contains(a) {
			return true
		}
	}
	return false
}

// parse reads an address written as "IP", "IP:port", "[IPv6]" or
// "[IPv6]:port"; the zero Addr when it is none of those.
// When it is a plain IPv4 address, text is the address as written: netip
// parses IPv4 only in its one canonical form (four decimal octets, no
// leading zeros), so that is its key, with nothing to format.
func parse(s string) (_ netip.Addr, text string) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if a := ap.Addr(); a.Is4() {
			return a, s[:strings.LastIndexByte(s, ':')]
		}
		return ap.Addr().Unmap().WithZone(""), ""
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Is4() {
			return a, s
		}
		return a.Unmap().WithZone(""), ""
	}
	return netip.Addr{}, ""
}

// key is the limiter's key for a, whose text parse gave.
func key(a netip.Addr, text string) string {
	switch {
	case !a.IsValid():
		return Invalid
	case a.Is4() && text != "":
		return text
	case a.Is4():
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// unmap writes an IPv4-mapped IPv6 prefix (::ffff:10.0.0.0/104) as the
// IPv4 prefix it is, since addresses are compared unmapped.
func unmap(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96).Masked()
	}
	return p
}

// CheckHeader refuses a header the Resolver cannot read: RFC 7239's
// Forwarded, whose entries are "for=..." pairs, would make every client
// the one Invalid key.
func CheckHeader(name string) error {
	if strings.EqualFold(strings.TrimSpace(name), "Forwarded") {
		return errors.New(`"Forwarded" (RFC 7239) is not read: name a header that holds a comma-separated list of addresses, such as X-Forwarded-For`)
	}
	return nil
}

// ParsePrefixes reads CIDR prefixes ("10.0.0.0/8") or single addresses
// ("192.0.2.1", taken as /32 or /128), for Resolver.Trusted.
func ParsePrefixes(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))
	for _, s := range in {
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, err
			}
			out = append(out, unmap(p.Masked()))
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, err
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
