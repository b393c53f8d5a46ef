// Package clientip finds the address a request came from, in the form the
// failure limiters key on: one address is one key, however it is written.
//
// IPv4 addresses are kept whole; IPv6 addresses are grouped by their /64
// prefix, the smallest block one subscriber is usually given, so an
// attacker cannot turn one connection into 2^64 keys. A port, an IPv6 zone
// and the IPv4-mapped IPv6 form are dropped.
package clientip

import (
	"errors"
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
}

// Invalid is the key of an address that cannot be parsed. They all share
// it, so garbage cannot mint keys.
const Invalid = "invalid"

// Addr returns the client address of r, normalised: IPv4 as it is, IPv6
// as its /64 prefix, Invalid when it cannot be parsed.
func (res Resolver) Addr(r *http.Request) string {
	remote, text := parse(r.RemoteAddr)
	if res.Header == "" {
		return key(remote, text)
	}
	if len(res.Trusted) > 0 && remote.IsValid() && !res.trusted(remote) {
		return key(remote, text)
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
			return key(a, text)
		}
	}
	return key(remote, text)
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
