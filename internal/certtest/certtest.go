// Package certtest makes real X.509 certificates for tests of mutual TLS:
// a CA, client certificates it issues with the subject, names, key usage
// and validity a test asks for, self-signed ones, and a server
// certificate for loopback. It holds no logic of the library.
package certtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"time"
)

// TB is what a maker needs of a test.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// CA is a certificate authority: its certificate and key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// NewCA makes a CA named cn, valid from an hour ago for twenty years.
func NewCA(t TB, cn string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(20 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("certtest: %v", err)
	}
	c, _ := x509.ParseCertificate(der)
	return &CA{Cert: c, Key: key}
}

// Leaf says what a certificate holds. The zero value is a client
// certificate named "client" (CN), with clientAuth, valid from an hour
// ago for a day.
type Leaf struct {
	Subject   pkix.Name // zero: CN=client
	DNS       []string
	URIs      []string
	IPs       []net.IP
	Emails    []string
	EKU       []x509.ExtKeyUsage // nil: clientAuth; empty non-nil: no EKU extension
	NotBefore time.Time          // zero: an hour ago
	NotAfter  time.Time          // zero: a day from now
	IsCA      bool
	Key       crypto.Signer // nil: a new P-256 key
}

// Issue makes a certificate of l signed by ca, with its key, as a TLS
// client presents it (Leaf and Certificate set).
func (ca *CA) Issue(t TB, l Leaf) tls.Certificate {
	t.Helper()
	return issue(t, l, ca.Cert, ca.Key)
}

// SelfSigned makes a self-signed client certificate of l.
func SelfSigned(t TB, l Leaf) tls.Certificate {
	t.Helper()
	return issue(t, l, nil, nil)
}

func issue(t TB, l Leaf, parent *x509.Certificate, parentKey crypto.Signer) tls.Certificate {
	t.Helper()
	key := l.Key
	if key == nil {
		key = newKey(t)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               l.Subject,
		DNSNames:              l.DNS,
		IPAddresses:           l.IPs,
		EmailAddresses:        l.Emails,
		NotBefore:             l.NotBefore,
		NotAfter:              l.NotAfter,
		ExtKeyUsage:           l.EKU,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  l.IsCA,
	}
	if l.IsCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	if len(l.Subject.Names) == 0 && len(l.Subject.ExtraNames) == 0 && l.Subject.CommonName == "" && len(l.Subject.Organization) == 0 {
		tmpl.Subject = pkix.Name{CommonName: "client"}
	}
	if l.EKU == nil {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = time.Now().Add(-time.Hour)
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	}
	for _, u := range l.URIs {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatalf("certtest: %v", err)
		}
		tmpl.URIs = append(tmpl.URIs, p)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatalf("certtest: %v", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("certtest: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// Server makes a certificate for 127.0.0.1, ::1 and localhost, signed by
// ca, for a TLS server.
func (ca *CA) Server(t TB) tls.Certificate {
	t.Helper()
	return ca.Issue(t, Leaf{
		Subject: pkix.Name{CommonName: "localhost"},
		DNS:     []string{"localhost"},
		IPs:     []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		EKU:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// Pool is a pool holding ca alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// PEM is the PEM of a DER certificate.
func PEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// KeyPEM is the PKCS #8 PEM of a certificate's private key.
func KeyPEM(t TB, c tls.Certificate) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatalf("certtest: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func newKey(t TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("certtest: %v", err)
	}
	return k
}

func serial(t TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatalf("certtest: %v", err)
	}
	return n
}
