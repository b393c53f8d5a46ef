package clientcert

import (
	"cmp"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// DN is a distinguished name: its relative distinguished names (RDNs) in
// the order RFC 4514 writes them, the most specific (CN=...) first, each
// a set of attribute types (by OID) and values.
type DN struct{ rdns [][]attr }

type attr struct {
	oid   string // dotted
	value string // as its bytes are, no normalization
}

// attrTypes are the attribute type names a DN may use: RFC 4514's, and
// those .NET and OpenSSL print (IdentityServer's X509Name secrets are in
// .NET's form: "CN=client, OU=production, O=company").
var attrTypes = map[string]string{
	"CN": "2.5.4.3", "SN": "2.5.4.4", "SERIALNUMBER": "2.5.4.5", "C": "2.5.4.6",
	"L": "2.5.4.7", "ST": "2.5.4.8", "S": "2.5.4.8", "STREET": "2.5.4.9",
	"O": "2.5.4.10", "OU": "2.5.4.11", "T": "2.5.4.12", "TITLE": "2.5.4.12",
	"G": "2.5.4.42", "GN": "2.5.4.42", "GIVENNAME": "2.5.4.42",
	"DC": "0.9.2342.19200300.100.1.25", "UID": "0.9.2342.19200300.100.1.1",
	"E": "1.2.840.113549.1.9.1", "EMAIL": "1.2.840.113549.1.9.1", "EMAILADDRESS": "1.2.840.113549.1.9.1",
}

// ParseDN reads a distinguished name written as RFC 4514 says
// ("CN=demo-mtls,O=Example"), the RDNs most specific first, "+" joining
// the attributes of a multi-valued RDN; it also takes what RFC 4514 lets
// implementations recognize and .NET writes: spaces around the
// separators, ";" between RDNs, a value in double quotes, "OID.2.5.4.3"
// for a type. A value is its characters after RFC 4514's escapes ("\,",
// "\2C") are undone, without the unescaped spaces at its ends; the BER
// form ("#04...") is not read.
func ParseDN(s string) (DN, error) {
	var d DN
	var rdn []attr
	i := 0
	for {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return DN{}, fmt.Errorf("%q: an attribute without \"=\"", s[i:])
		}
		name := strings.TrimSpace(s[i : i+eq])
		oid, err := attrOID(name)
		if err != nil {
			return DN{}, err
		}
		i = skipSpaces(s, i+eq+1)
		var value string
		if value, i, err = readValue(s, i); err != nil {
			return DN{}, fmt.Errorf("the value of %s: %w", name, err)
		}
		rdn = append(rdn, attr{oid: oid, value: value})
		if i == len(s) {
			d.rdns = append(d.rdns, rdn)
			return d, nil
		}
		if s[i] != '+' {
			d.rdns, rdn = append(d.rdns, rdn), nil
		}
		i = skipSpaces(s, i+1)
		if i == len(s) {
			return DN{}, errors.New("it ends with a separator")
		}
	}
}

// attrOID is the OID of an attribute type name: a keyword of attrTypes
// (without regard to case), or an OID, dotted, with "OID." or without.
func attrOID(name string) (string, error) {
	if oid, ok := attrTypes[strings.ToUpper(name)]; ok {
		return oid, nil
	}
	oid := name
	if len(oid) > 4 && strings.EqualFold(oid[:4], "OID.") {
		oid = oid[4:]
	}
	parts := strings.Split(oid, ".")
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" || (len(p) > 1 && p[0] == '0') {
			return "", fmt.Errorf("attribute type %q: want one of CN, O, OU, C, L, ST, STREET, DC, UID, E, SERIALNUMBER, SN, G, T, or an OID", name)
		}
	}
	if len(parts) < 2 {
		return "", fmt.Errorf("attribute type %q: want one of CN, O, OU, C, L, ST, STREET, DC, UID, E, SERIALNUMBER, SN, G, T, or an OID", name)
	}
	return oid, nil
}

func skipSpaces(s string, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

// readValue reads the value that starts at s[i], up to the separator
// (",", ";" or "+") after it or the end, and returns where it stopped.
func readValue(s string, i int) (string, int, error) {
	var v []byte
	if i < len(s) && s[i] == '#' {
		return "", 0, errors.New("the BER form (#...) is not read: write the value as text")
	}
	if i < len(s) && s[i] == '"' {
		for i++; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' {
				var err error
				if v, i, err = unescape(s, i, v); err != nil {
					return "", 0, err
				}
				continue
			}
			v = append(v, s[i])
		}
		if i == len(s) {
			return "", 0, errors.New("a quote that does not end")
		}
		i = skipSpaces(s, i+1)
		if i < len(s) && s[i] != ',' && s[i] != ';' && s[i] != '+' {
			return "", 0, errors.New("text after its closing quote")
		}
		return string(v), i, nil
	}
	significant := 0 // the length of v up to its last character that is no unescaped space
	for i < len(s) && s[i] != ',' && s[i] != ';' && s[i] != '+' {
		switch c := s[i]; c {
		case '\\':
			var err error
			if v, i, err = unescape(s, i, v); err != nil {
				return "", 0, err
			}
			significant = len(v)
			continue
		case '"', '<', '>':
			return "", 0, fmt.Errorf("%q must be escaped (\\%c)", c, c)
		default:
			v = append(v, c)
			if c != ' ' {
				significant = len(v)
			}
		}
		i++
	}
	if significant == 0 {
		return "", 0, errors.New("empty")
	}
	return string(v[:significant]), i, nil
}

// unescape appends the character of the escape at s[i] ("\," or "\2C")
// to v and returns where the escape ends.
func unescape(s string, i int, v []byte) ([]byte, int, error) {
	if i+1 < len(s) && strings.IndexByte(`,=+<>#;\" `, s[i+1]) >= 0 {
		return append(v, s[i+1]), i + 2, nil
	}
	if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
		return append(v, unhex(s[i+1])<<4|unhex(s[i+2])), i + 3, nil
	}
	return nil, 0, errors.New(`a "\" that escapes nothing RFC 4514 escapes`)
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// SubjectDN returns the subject of cert, read from its DER, every RDN
// and attribute as it is there. A value that is not a string type is
// kept as one no DN written as text equals.
func SubjectDN(cert *x509.Certificate) (DN, error) {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) > 0 {
		return DN{}, errors.New("the certificate's subject cannot be read")
	}
	d := DN{rdns: make([][]attr, 0, len(seq))}
	for i := len(seq) - 1; i >= 0; i-- { // DER holds the least specific first
		rdn := make([]attr, 0, len(seq[i]))
		for _, atv := range seq[i] {
			v, ok := atv.Value.(string)
			if !ok {
				v = "\x00not a string"
			}
			rdn = append(rdn, attr{oid: atv.Type.String(), value: v})
		}
		d.rdns = append(d.rdns, rdn)
	}
	return d, nil
}

// Equal reports whether d and e name the same entry: the same RDNs in the
// same order, each the same set of attributes, types by OID and values
// byte for byte (stricter than LDAP's matching rules, which ignore the
// case of most values: a DN that differs in case does not match, and the
// client is refused).
func (d DN) Equal(e DN) bool {
	if len(d.rdns) != len(e.rdns) {
		return false
	}
	for i, rdn := range d.rdns {
		if len(rdn) != len(e.rdns[i]) {
			return false
		}
		if !slices.Equal(sortedAttrs(rdn), sortedAttrs(e.rdns[i])) {
			return false
		}
	}
	return true
}

// sortedAttrs is a copy of an RDN's attributes in one order: an RDN is a
// set.
func sortedAttrs(rdn []attr) []attr {
	s := slices.Clone(rdn)
	slices.SortFunc(s, func(a, b attr) int {
		return cmp.Or(strings.Compare(a.oid, b.oid), strings.Compare(a.value, b.value))
	})
	return s
}

// IsZero reports whether d is no DN (the zero value).
func (d DN) IsZero() bool { return len(d.rdns) == 0 }
