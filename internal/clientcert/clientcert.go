// Package clientcert finds the client certificate of a request made over
// mutual TLS (RFC 8705): the connection's, or the one a TLS-terminating
// proxy in front of the service forwards in a header, read only when the
// request comes from that proxy's address. It computes a certificate's
// SHA-256 thumbprint, the "x5t#S256" of certificate-bound tokens (RFC 8705
// §3.1), once per certificate: what the middleware, the issuer and the
// gRPC and Connect interceptors share.
package clientcert

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/netip"
	"net/textproto"
	"strings"
	"sync/atomic"
	"unsafe"
	"weak"
)

// Thumbprint returns the x5t#S256 of the certificate whose DER is der:
// the base64url of its SHA-256, without padding (RFC 8705 §3.1).
func Thumbprint(der []byte) string {
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Equal reports whether the thumbprints a and b are the same, in time
// that depends on their lengths only: eight bytes at a time, every byte
// compared, what differs gathered without a branch.
func Equal(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var v uint64
	i := 0
	for ; i+8 <= len(a); i += 8 {
		v |= word(a[i:i+8]) ^ word(b[i:i+8])
	}
	for ; i < len(a); i++ {
		v |= uint64(a[i] ^ b[i])
	}
	return v == 0
}

// word is the first eight bytes of s, which the compiler loads as one.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// Of returns the thumbprint of cert, a connection's peer certificate. It
// is computed once per certificate: net/http parses a connection's
// certificates once, at its handshake, and gives every request on it
// (every stream of an HTTP/2 connection) the same *x509.Certificate, so
// that a connection's thumbprint is computed once, at its first request.
// The thumbprints are remembered in a table of certSlots entries keyed by
// the certificate's address and holding it by a weak pointer: it keeps no
// certificate alive, a certificate gone cannot be mistaken for a new one
// at its address, and a thumbprint pushed out by another is computed
// again.
func Of(cert *x509.Certificate) string {
	slot := &certs[certSlot(cert)]
	if e := slot.Load(); e != nil && e.cert.Value() == cert {
		return e.x5t
	}
	computed.Add(1)
	e := &certEntry{cert: weak.Make(cert), x5t: Thumbprint(cert.Raw)}
	slot.Store(e)
	return e.x5t
}

// certSlots is the size of the table of connections' thumbprints: about
// 100 bytes each, 100 KiB in all.
const certSlots = 1024

type certEntry struct {
	cert weak.Pointer[x509.Certificate]
	x5t  string
}

var certs [certSlots]atomic.Pointer[certEntry]

// computed counts the thumbprints computed, of connections' certificates
// and of forwarded ones: the work the tables save, which tests count.
var computed atomic.Uint64

// certSlot hashes a certificate's address, which is only compared and
// never dereferenced, into the table.
func certSlot(cert *x509.Certificate) uint64 {
	h := uint64(uintptr(unsafe.Pointer(cert)))
	h ^= h >> 29
	h *= 0x9e3779b97f4a7c15
	return h >> (64 - 10) // certSlots = 1 << 10
}

// Source is where a service finds its clients' certificates: the
// connection's, unless the request comes from a trusted proxy, in front
// of the service, which puts the certificate of its own client in a
// header. The zero value reads the connection alone; NewSource makes one
// that reads a proxy's header.
type Source struct {
	header  string         // the header the proxy sets, as configured (see Decode for the forms read)
	key     string         // the same, canonical: the request's header map is read without canonicalizing
	trusted []netip.Prefix // the proxies: masked, IPv4-mapped ones as IPv4
}

// NewSource returns the Source that reads header from the proxies at the
// addresses of trusted alone, and from them never the connection's
// certificate (the proxy's own). RemoteAddr is compared unmapped: an
// IPv4-mapped prefix is its IPv4 prefix. A setting that would let
// anyone name a certificate is a *SettingError: no header, or one that is
// not a header name or that carries what the client sends
// (Authorization, DPoP, Cookie); no proxies (the header would be anyone's
// to set), or a prefix that is not one.
func NewSource(header string, trusted []netip.Prefix) (Source, error) {
	switch {
	case header == "":
		return Source{}, &SettingError{Field: "Header", Reason: "empty: name the header the proxy sets"}
	case strings.Trim(header, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "":
		return Source{}, &SettingError{Field: "Header", Reason: fmt.Sprintf("%q is not a header name", header)}
	case strings.EqualFold(header, "Authorization"), strings.EqualFold(header, "DPoP"), strings.EqualFold(header, "Cookie"):
		return Source{}, &SettingError{Field: "Header", Reason: fmt.Sprintf("%q carries what the client sends, not the proxy", header)}
	case len(trusted) == 0:
		return Source{}, &SettingError{Field: "TrustedProxies", Reason: "empty: without the proxies' addresses, the header would be anyone's to set"}
	}
	out := make([]netip.Prefix, 0, len(trusted))
	for _, p := range trusted {
		if !p.IsValid() {
			return Source{}, &SettingError{Field: "TrustedProxies", Reason: "one is not a prefix"}
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return Source{header: header, key: textproto.CanonicalMIMEHeaderKey(header), trusted: out}, nil
}

// SettingError is a forwarded-certificate setting NewSource refuses: the
// field (Header or TrustedProxies), under the caller's name for it, and
// why.
type SettingError struct {
	Field  string // "Header" or "TrustedProxies"
	Reason string
}

func (e *SettingError) Error() string { return e.Field + " " + e.Reason }

// FromProxy reports whether r comes from a trusted proxy: its RemoteAddr
// is an IP address (with a port or without) of a trusted proxy. A RemoteAddr that
// is not one, such as a Unix socket's, is no proxy's: fail closed.
func (s Source) FromProxy(r *http.Request) bool {
	if s.key == "" || len(s.trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	var a netip.Addr
	if err == nil {
		a = ap.Addr()
	} else if a, err = netip.ParseAddr(r.RemoteAddr); err != nil {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, p := range s.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Thumbprint returns the x5t#S256 of r's client certificate, or "" when r
// presented none (or its proxy forwarded one that cannot be read): from a
// trusted proxy, the one in its header, else the connection's.
func (s Source) Thumbprint(r *http.Request) string {
	if s.FromProxy(r) {
		return forwardedThumbprint(s.header, r.Header[s.key])
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return ""
	}
	return Of(r.TLS.PeerCertificates[0])
}

// Chain returns r's client certificate and the intermediates it came
// with, leaf first, as Thumbprint chooses them; none when r presented
// none. A forwarded certificate is parsed here, on each call; an error
// says the proxy's header cannot be read.
func (s Source) Chain(r *http.Request) ([]*x509.Certificate, error) {
	if s.FromProxy(r) {
		values := r.Header[s.key]
		if len(values) == 0 {
			return nil, nil
		}
		if len(values) > 1 {
			return nil, errTwoHeaders
		}
		ders, _, err := Decode(s.header, values[0])
		if err != nil {
			return nil, err
		}
		chain := make([]*x509.Certificate, 0, len(ders))
		for _, der := range ders {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, err
			}
			chain = append(chain, c)
		}
		return chain, nil
	}
	if r.TLS == nil {
		return nil, nil
	}
	return r.TLS.PeerCertificates, nil
}

// forwardedThumbprint is the thumbprint of the certificate a proxy put
// in the header's values, "" for none, several values, or one that
// cannot be read. The thumbprints of the values last read are remembered
// (see valueSlots): a proxy sends its client's certificate with each of
// its requests, and decoding one costs about a microsecond.
func forwardedThumbprint(header string, values []string) string {
	if len(values) != 1 || values[0] == "" || len(values[0]) > maxValue {
		return ""
	}
	v := values[0]
	cacheable := len(v) <= maxCachedValue
	var slot *atomic.Pointer[valueEntry]
	if cacheable {
		slot = &forwarded[maphash.String(seed, v)%valueSlots]
		if e := slot.Load(); e != nil && e.value == v && e.header == header {
			return e.x5t
		}
	}
	computed.Add(1)
	ders, hash, err := Decode(header, v)
	if err != nil {
		return ""
	}
	x5t := ""
	if hash != nil {
		x5t = base64.RawURLEncoding.EncodeToString(hash)
	} else {
		x5t = Thumbprint(ders[0])
	}
	if cacheable {
		slot.Store(&valueEntry{header: header, value: v, x5t: x5t})
	}
	return x5t
}

// The thumbprints of forwarded values: valueSlots entries of at most
// maxCachedValue bytes each (a certificate's PEM is one or two KiB), so
// at most 1 MiB, filled only by the trusted proxies' requests. An entry
// is found by its value, compared whole: two values never share one.
const (
	valueSlots     = 256
	maxCachedValue = 4 << 10
	// maxValue is the longest value read at all: 64 KiB, a certificate
	// chain's, under net/http's 1 MiB of headers.
	maxValue = 64 << 10
)

type valueEntry struct {
	header, value, x5t string
}

var (
	forwarded [valueSlots]atomic.Pointer[valueEntry]
	seed      = maphash.MakeSeed()
)

// Computed is how many thumbprints have been computed, for tests in
// other packages that count the work the tables save.
func Computed() uint64 { return computed.Load() }
