package clientcert

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/certtest"
)

func TestThumbprintIsBase64urlSHA256(t *testing.T) {
	c := certtest.SelfSigned(t, certtest.Leaf{})
	sum := sha256.Sum256(c.Leaf.Raw)
	want := strings.TrimRight(base64.URLEncoding.EncodeToString(sum[:]), "=")
	if got := Thumbprint(c.Leaf.Raw); got != want || len(got) != 43 {
		t.Fatalf("Thumbprint = %q, want %q", got, want)
	}
	other := want[:42] + "A" // another last character: one in 16 thumbprints ends with A
	if want[42] == 'A' {
		other = want[:42] + "E"
	}
	if !Equal(want, Thumbprint(c.Leaf.Raw)) || Equal(want, other) || Equal(want, want[:42]) {
		t.Fatal("Equal is wrong")
	}
}

// A connection's certificate is the same *x509.Certificate for each of
// its requests: its thumbprint is computed once, whatever the number of
// requests.
func TestOfComputesOncePerCertificate(t *testing.T) {
	src := Connections()
	a := certtest.SelfSigned(t, certtest.Leaf{}).Leaf
	b := certtest.SelfSigned(t, certtest.Leaf{}).Leaf
	before := computed.Load()
	for range 100 {
		if src.Of(a) != Thumbprint(a.Raw) || src.Of(b) != Thumbprint(b.Raw) {
			t.Fatal("wrong thumbprint")
		}
	}
	if n := computed.Load() - before; n != 2 {
		t.Fatalf("computed %d thumbprints for 200 look-ups of two certificates, want 2", n)
	}
	// The same bytes parsed again are another certificate (another
	// connection): computed again, and the same.
	again, _ := x509.ParseCertificate(a.Raw)
	before = computed.Load()
	if src.Of(again) != src.Of(a) || computed.Load()-before != 1 {
		t.Fatal("another *x509.Certificate must be computed, and give the same thumbprint")
	}
	// The zero Source remembers nothing.
	before = computed.Load()
	for range 2 {
		if (Source{}).Of(a) != Thumbprint(a.Raw) {
			t.Fatal("the zero Source: wrong thumbprint")
		}
	}
	if n := computed.Load() - before; n != 2 {
		t.Fatalf("the zero Source computed %d thumbprints for 2 look-ups: it remembered", n)
	}
}

// A Source's memory is bounded in bytes: full, it forgets all and fills
// again, and what it answers is never another key's.
func TestMemoryIsBounded(t *testing.T) {
	m := newMemory()
	value := strings.Repeat("v", maxRemembered-16)
	n := 0
	for i := range 2 * memoryBytes / (entryBytes + len(value)) {
		m.put(memoryKey{value: fmt.Sprint(i, value)}, fmt.Sprint(i))
		if m.bytes > memoryBytes {
			t.Fatalf("%d bytes charged, over %d", m.bytes, memoryBytes)
		}
		n = max(n, len(m.m))
	}
	if n < memoryBytes/(entryBytes+len(value)+8) {
		t.Fatalf("at most %d entries held at once", n)
	}
	for k, v := range m.m {
		if !strings.HasPrefix(k.value, v) {
			t.Fatalf("entry %q holds %q", k.value[:10], v)
		}
	}
	m.put(memoryKey{value: value + strings.Repeat("x", 17)}, "too long")
	if _, ok := m.get(memoryKey{value: value + strings.Repeat("x", 17)}); ok {
		t.Fatal("a value over maxRemembered was kept")
	}
}

func TestDecodeForms(t *testing.T) {
	c := certtest.SelfSigned(t, certtest.Leaf{})
	der := c.Leaf.Raw
	pemText := string(certtest.PEM(der))
	sum := sha256.Sum256(der)
	nginx := url.PathEscape(pemText) // $ssl_client_escaped_cert: "-----BEGIN%20CERTIFICATE-----%0A..."
	other := certtest.SelfSigned(t, certtest.Leaf{}).Leaf.Raw
	otherPEM, otherSum := string(certtest.PEM(other)), sha256.Sum256(other)
	for _, tc := range []struct {
		name, header, value string
		want                bool
	}{
		{"nginx escaped PEM", "X-SSL-CERT", nginx, true},
		{"nginx escaped PEM, all escaped", "X-SSL-CERT", strings.ReplaceAll(url.QueryEscape(pemText), "+", "%20"), true},
		{"PEM, line ends as spaces (Apache)", "X-SSL-CERT", strings.ReplaceAll(strings.TrimSpace(pemText), "\n", " "), true},
		{"PEM", "X-SSL-CERT", pemText, true},
		{"base64 DER (ARR)", "X-ARR-ClientCert", base64.StdEncoding.EncodeToString(der), true},
		{"hex DER", "X-ARR-ClientCert", hex.EncodeToString(der), true},
		{"RFC 9440 Client-Cert", "Client-Cert", ":" + base64.StdEncoding.EncodeToString(der) + ":", true},
		{"RFC 9440 Client-Cert, two byte sequences", "Client-Cert", ":" + base64.StdEncoding.EncodeToString(der) + ":, :" + base64.StdEncoding.EncodeToString(der) + ":", false},
		{"RFC 9440 Client-Cert, not base64", "Client-Cert", ":not base64!:", false},
		{"RFC 9440 Client-Cert, empty", "Client-Cert", "::", false},
		{"XFCC Hash and Cert", "x-forwarded-client-cert", `By=spiffe://x;Hash=` + hex.EncodeToString(sum[:]) + `;Cert="` + url.PathEscape(pemText) + `";Subject="CN=client"`, true},
		{"XFCC Cert", "X-Forwarded-Client-Cert", `Cert="` + url.PathEscape(pemText) + `"`, true},
		{"XFCC Hash", "X-Forwarded-Client-Cert", `Hash=` + hex.EncodeToString(sum[:]), true},
		{"XFCC two elements (APPEND_FORWARD)", "X-Forwarded-Client-Cert", `Hash=` + hex.EncodeToString(sum[:]) + `,Hash=` + hex.EncodeToString(sum[:]), false},
		{"XFCC a Hash that is not the Cert's", "X-Forwarded-Client-Cert", `Hash=` + strings.Repeat("00", 32) + `;Cert="` + url.PathEscape(pemText) + `"`, false},
		{"XFCC without either", "X-Forwarded-Client-Cert", `By=spiffe://x;Subject="CN=x"`, false},
		{"XFCC Hash twice (the last would win)", "X-Forwarded-Client-Cert", `Hash=` + hex.EncodeToString(otherSum[:]) + `;Hash=` + hex.EncodeToString(sum[:]), false},
		{"XFCC Cert twice", "X-Forwarded-Client-Cert", `Cert="` + url.PathEscape(otherPEM) + `";Cert="` + url.PathEscape(pemText) + `"`, false},
		{"XFCC Cert twice, its key in two cases", "X-Forwarded-Client-Cert", `Cert="` + url.PathEscape(otherPEM) + `";cert="` + url.PathEscape(pemText) + `"`, false},
		{"XFCC Chain twice", "X-Forwarded-Client-Cert", `Chain="` + url.PathEscape(otherPEM) + `";Chain="` + url.PathEscape(pemText) + `"`, false},
		{"XFCC DNS twice (Envoy writes one per name)", "X-Forwarded-Client-Cert", `Hash=` + hex.EncodeToString(sum[:]) + `;DNS=a.example;DNS=b.example`, true},
		{"garbage", "X-SSL-CERT", "not a certificate", false},
		{"two PEM certificates (a proxy that appended)", "X-SSL-CERT", pemText + pemText, false},
		{"two escaped PEM certificates joined by a comma", "X-SSL-CERT", nginx + ", " + nginx, false},
		{"two base64 certificates joined by a comma", "X-ARR-ClientCert", base64.StdEncoding.EncodeToString(der) + "," + base64.StdEncoding.EncodeToString(der), false},
		{"PEM without an end", "X-SSL-CERT", "-----BEGIN CERTIFICATE----- MIIB", false},
		{"base64 of something else", "X-SSL-CERT", base64.StdEncoding.EncodeToString([]byte("hello there")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ders, hash, err := Decode(tc.header, tc.value)
			if !tc.want {
				if err == nil {
					t.Fatalf("read %d certificates from it; want an error", len(ders))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if hash != nil && [32]byte(hash) != sum {
				t.Fatal("wrong hash")
			}
			if hash == nil && (len(ders) != 1 || string(ders[0]) != string(der)) {
				t.Fatal("wrong certificate")
			}
			got := Source{header: tc.header}.forwarded([]string{tc.value})
			if got != Thumbprint(der) {
				t.Fatalf("thumbprint %q, want %q", got, Thumbprint(der))
			}
		})
	}
}

// The header is believed only from a trusted proxy's address: from any
// other, the connection's certificate is the client's; from a proxy, the
// header's alone, never the proxy's own connection certificate.
func TestSourceTrustsProxiesOnly(t *testing.T) {
	client := certtest.SelfSigned(t, certtest.Leaf{}).Leaf
	proxy := certtest.SelfSigned(t, certtest.Leaf{Subject: pkix.Name{CommonName: "proxy"}}).Leaf
	header := url.PathEscape(string(certtest.PEM(client.Raw)))
	src, err := NewSource("X-SSL-CERT", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24"), netip.MustParsePrefix("2001:db8::/64"), netip.MustParsePrefix("::ffff:172.16.0.0/108")})
	if err != nil {
		t.Fatal(err)
	}
	req := func(remote string, conn *x509.Certificate, values ...string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = remote
		if conn != nil {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{conn}}
		}
		for _, v := range values {
			r.Header.Add("X-SSL-CERT", v)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    *http.Request
		want string
	}{
		{"a trusted proxy's header", req("10.0.0.7:4000", nil, header), Thumbprint(client.Raw)},
		{"a trusted proxy over IPv6", req("[2001:db8::5]:4000", nil, header), Thumbprint(client.Raw)},
		{"a trusted proxy, IPv4-mapped", req("[::ffff:10.0.0.7]:4000", nil, header), Thumbprint(client.Raw)},
		{"a trusted proxy of an IPv4-mapped prefix", req("172.16.0.9:4000", nil, header), Thumbprint(client.Raw)},
		{"a trusted proxy's own certificate is not its client's", req("10.0.0.7:4000", proxy), ""},
		{"a trusted proxy with both", req("10.0.0.7:4000", proxy, header), Thumbprint(client.Raw)},
		{"a trusted proxy's header twice", req("10.0.0.7:4000", nil, header, header), ""},
		{"a header from elsewhere", req("10.0.1.7:4000", nil, header), ""},
		{"a header from elsewhere, beside a connection certificate", req("192.0.2.1:4000", proxy, header), Thumbprint(proxy.Raw)},
		{"a Unix socket is no proxy", req("@", nil, header), ""},
		{"an empty RemoteAddr is no proxy", req("", nil, header), ""},
		{"a connection certificate", req("192.0.2.1:4000", client), Thumbprint(client.Raw)},
		{"none", req("192.0.2.1:4000", nil), ""},
	} {
		if got := src.Thumbprint(tc.r); got != tc.want {
			t.Errorf("%s: thumbprint %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := (Source{}).Thumbprint(req("10.0.0.7:4000", nil, header)); got != "" {
		t.Errorf("the zero Source read a header: %q", got)
	}
	if noProxy, err := NewSource("X-SSL-CERT", nil); err == nil || noProxy.Thumbprint(req("10.0.0.7:4000", nil, header)) != "" {
		t.Errorf("a Source without trusted proxies: %v, and it read a header", err)
	}
	chain, err := src.Chain(req("10.0.0.7:4000", proxy, header))
	if err != nil || len(chain) != 1 || !chain[0].Equal(client) {
		t.Fatalf("Chain from a proxy = %v, %v; want the client's certificate", chain, err)
	}
}

// A forwarded value is decoded once while it stays in the memory, and a
// value read wrong is never taken for another.
func TestForwardedDecodedOncePerValue(t *testing.T) {
	a := certtest.SelfSigned(t, certtest.Leaf{}).Leaf
	b := certtest.SelfSigned(t, certtest.Leaf{}).Leaf
	va, vb := url.PathEscape(string(certtest.PEM(a.Raw))), url.PathEscape(string(certtest.PEM(b.Raw)))
	src, err := NewSource("X-SSL-CERT", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	before := computed.Load()
	for range 100 {
		if src.forwarded([]string{va}) != Thumbprint(a.Raw) {
			t.Fatal("wrong thumbprint of a")
		}
		if src.forwarded([]string{vb}) != Thumbprint(b.Raw) {
			t.Fatal("wrong thumbprint of b")
		}
	}
	if n := computed.Load() - before; n != 2 {
		t.Fatalf("decoded %d times for 200 reads of two values, want 2", n)
	}
}

func TestEqual(t *testing.T) {
	a := "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"
	for i := range len(a) {
		b := []byte(a)
		b[i] ^= 1
		if Equal(a, string(b)) {
			t.Errorf("byte %d changed: equal", i)
		}
	}
	if !Equal(a, a) || !Equal("", "") || Equal(a, a[:42]) || !Equal("abc", "abc") || Equal("abc", "abd") {
		t.Error("Equal is wrong")
	}
	long := strings.Repeat(a, 3)
	if !Equal(long, strings.Clone(long)) || Equal(long, long[:128]+"x"+long[129:]) {
		t.Error("Equal is wrong past 64 bytes")
	}
	// On every certificate-bound request's path.
	b := strings.Clone(a)
	if n := testing.AllocsPerRun(100, func() { _ = Equal(a, b) }); n != 0 {
		t.Errorf("Equal allocates %v times", n)
	}
}

// A connection's thumbprint, remembered, costs no allocation: it is on
// the path of every request of a connection with a certificate.
func TestOfRemembered(t *testing.T) {
	src := Connections()
	c := certtest.SelfSigned(t, certtest.Leaf{}).Leaf
	src.Of(c)
	if n := testing.AllocsPerRun(100, func() { _ = src.Of(c) }); n != 0 {
		t.Errorf("Of allocates %v times", n)
	}
}
