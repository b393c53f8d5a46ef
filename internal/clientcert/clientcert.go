// Package clientcert finds the client certificate of a request made over
// mutual TLS (RFC 8705): the connection's, or the one a TLS-terminating
// proxy in front of the service forwards in a header, read only when the
// request comes from that proxy's address. It computes a certificate's
// SHA-256 thumbprint, the "x5t#S256" of certificate-bound tokens (RFC 8705
// §3.1), and a Source remembers it: what the middleware, the issuer and
// the gRPC and Connect interceptors share.
package clientcert

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"weak"
)

// Thumbprint returns the x5t#S256 of the certificate whose DER is der:
// the base64url of its SHA-256, without padding (RFC 8705 §3.1).
func Thumbprint(der []byte) string {
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Equal reports whether the thumbprints a and b are the same, in time
// that depends on their lengths only. The conversions neither copy nor
// allocate: the bytes are only read (TestEqual counts).
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// computed counts the thumbprints computed, of connections' certificates
// and of forwarded ones: the work a Source's memory saves, which tests
// count.
var computed atomic.Uint64

// Computed is how many thumbprints have been computed, for tests in
// other packages that count the work a Source's memory saves.
func Computed() uint64 { return computed.Load() }

// Source is where a service finds its clients' certificates: the
// connection's, unless the request comes from a trusted proxy, in front
// of the service, which puts the certificate of its own client in a
// header. Connections and NewSource make one that remembers the
// thumbprints it computes (see memory); the zero value reads the
// connection alone and remembers nothing.
type Source struct {
	header  string         // the header the proxy sets, as configured (see Decode for the forms read)
	key     string         // the same, canonical: the request's header map is read without canonicalizing
	trusted []netip.Prefix // the proxies: masked, IPv4-mapped ones as IPv4
	seen    *memory        // the thumbprints computed; nil: none kept
}

// Connections returns the Source that reads the connections'
// certificates alone, and remembers their thumbprints.
func Connections() Source { return Source{seen: newMemory()} }

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
	return Source{header: header, key: textproto.CanonicalMIMEHeaderKey(header), trusted: out, seen: newMemory()}, nil
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
		return s.forwarded(r.Header[s.key])
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return ""
	}
	return s.Of(r.TLS.PeerCertificates[0])
}

// Of returns the thumbprint of cert, a connection's peer certificate.
// net/http and grpc-go parse a connection's certificates once, at its
// handshake, and give every request or call on it (every stream of an
// HTTP/2 connection) the same *x509.Certificate: s computes a
// connection's thumbprint at its first request.
func (s Source) Of(cert *x509.Certificate) string {
	k := memoryKey{cert: weak.Make(cert)}
	if x5t, ok := s.seen.get(k); ok {
		return x5t
	}
	computed.Add(1)
	x5t := Thumbprint(cert.Raw)
	s.seen.put(k, x5t)
	return x5t
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

// forwarded is the thumbprint of the certificate a proxy put in the
// header's values, "" for none, several values, or one that cannot be
// read. A proxy sends its client's certificate with each of its requests,
// and decoding one costs microseconds: s remembers a value's thumbprint.
func (s Source) forwarded(values []string) string {
	if len(values) != 1 || values[0] == "" || len(values[0]) > maxValue {
		return ""
	}
	k := memoryKey{value: values[0]}
	if x5t, ok := s.seen.get(k); ok {
		return x5t
	}
	computed.Add(1)
	ders, hash, err := Decode(s.header, k.value)
	if err != nil {
		return ""
	}
	x5t := ""
	if hash != nil {
		x5t = base64.RawURLEncoding.EncodeToString(hash)
	} else {
		x5t = Thumbprint(ders[0])
	}
	s.seen.put(k, x5t)
	return x5t
}

// maxValue is the longest forwarded value read at all: 64 KiB, a
// certificate chain's, under net/http's 1 MiB of headers.
const maxValue = 64 << 10

// memory is a Source's thumbprints, by what they were computed from:
// a connection's certificate, held by a weak pointer (the memory keeps no
// certificate alive, and a certificate gone cannot be taken for a new
// one at its address), or the header value a certificate was forwarded
// in. It holds at most memoryBytes, and values of at most maxRemembered
// bytes; when full it forgets all, and fills again. Only the trusted
// proxies' requests and the connections that presented a certificate
// fill it. It is safe for concurrent use; a nil memory remembers nothing.
type memory struct {
	mu    sync.RWMutex
	m     map[memoryKey]string
	bytes int // charged for m's entries (see entryBytes)
}

type memoryKey struct {
	cert  weak.Pointer[x509.Certificate] // a connection's certificate; zero for a forwarded one
	value string                         // the header value a certificate was forwarded in
}

const (
	memoryBytes   = 1 << 20
	maxRemembered = 4 << 10 // a certificate's PEM is one or two KiB
	// entryBytes is what an entry costs beside its value: the map's
	// share, the key, the thumbprint.
	entryBytes = 128
)

func newMemory() *memory { return &memory{m: make(map[memoryKey]string)} }

func (m *memory) get(k memoryKey) (string, bool) {
	if m == nil {
		return "", false
	}
	m.mu.RLock()
	x5t, ok := m.m[k]
	m.mu.RUnlock()
	return x5t, ok
}

func (m *memory) put(k memoryKey, x5t string) {
	if m == nil || len(k.value) > maxRemembered {
		return
	}
	k.value = strings.Clone(k.value) // not the request's memory
	cost := entryBytes + len(k.value)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bytes+cost > memoryBytes {
		clear(m.m)
		m.bytes = 0
	}
	if _, ok := m.m[k]; !ok {
		m.m[k] = x5t
		m.bytes += cost
	}
}
