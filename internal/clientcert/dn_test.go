package clientcert

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"github.com/idsauth/idsauth/internal/certtest"
)

func TestDNMatchesTheSubject(t *testing.T) {
	subject := pkix.Name{
		CommonName:         "client, one",
		OrganizationalUnit: []string{"production"},
		Organization:       []string{"company"},
		Country:            []string{"DE"},
	}
	cert := certtest.SelfSigned(t, certtest.Leaf{Subject: subject}).Leaf
	got, err := SubjectDN(cert)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`CN=client\, one,OU=production,O=company,C=DE`,     // RFC 4514
		`CN=client\2C one,OU=production,O=company,C=DE`,    // hex escape
		`CN="client, one", OU=production, O=company, C=DE`, // .NET, IdentityServer's X509Name
		`cn=client\, one;ou=production;o=company;c=DE`,     // RFC 1779 separators, types in lower case
		`2.5.4.3=client\, one,OID.2.5.4.11=production,O=company,C=DE`,
		`  CN = client\, one , OU=production,O=company,C=DE  `, // spaces around separators
	} {
		d, err := ParseDN(s)
		if err != nil {
			t.Errorf("ParseDN(%q): %v", s, err)
			continue
		}
		if !d.Equal(got) {
			t.Errorf("%q does not match the subject %s", s, cert.Subject)
		}
	}
	for _, s := range []string{
		`CN=client\, one,OU=production,O=company`,        // one RDN fewer
		`C=DE,O=company,OU=production,CN=client\, one`,   // reversed: DER's order
		`CN=Client\, one,OU=production,O=company,C=DE`,   // case
		`CN=client\, one,OU=production,O=company,C=DE ,`, // trailing separator: an error
		`CN=client\, one+OU=production,O=company,C=DE`,   // a multi-valued RDN that is not
		`CN=client\, one\ ,OU=production,O=company,C=DE`, // an escaped space is the value's
	} {
		d, err := ParseDN(s)
		if err == nil && d.Equal(got) {
			t.Errorf("%q matches the subject %s", s, cert.Subject)
		}
	}
}

func TestDNMultiValuedRDN(t *testing.T) {
	oidCN, oidUID := asn1.ObjectIdentifier{2, 5, 4, 3}, asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	subject := pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidCN, Value: "svc"}}}
	cert := certtest.SelfSigned(t, certtest.Leaf{Subject: subject}).Leaf
	_ = oidUID
	got, _ := SubjectDN(cert)
	if d, _ := ParseDN("CN=svc"); !d.Equal(got) {
		t.Fatal("CN=svc")
	}
	a, _ := ParseDN("CN=svc+UID=7,O=x")
	b, _ := ParseDN("UID=7 + CN=svc,O=x")
	if !a.Equal(b) {
		t.Fatal("an RDN is a set: its attributes in any order")
	}
}

func TestParseDNRefuses(t *testing.T) {
	for _, s := range []string{"", "CN", "CN=", "XX=a", "CN=#0403616263", `CN=a"b`, `CN="a`, `CN=a\`, `CN=a\zz`, "CN=a,", "CN=a,,O=b", "1=a"} {
		if _, err := ParseDN(s); err == nil {
			t.Errorf("ParseDN(%q) took it", s)
		}
	}
}
