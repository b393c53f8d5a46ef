package clientcert

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
)

var (
	errTwoHeaders      = errors.New("the certificate header is given more than once")
	errUnreadable      = errors.New("the certificate header holds no certificate in a form read here")
	errXFCC            = errors.New("x-forwarded-client-cert: want one element, with Cert or Hash")
	errTwoCertificates = errors.New("the certificate header holds more than one certificate")
)

// Decode reads the value of the header in which a proxy forwards its
// client's certificate, in the forms proxies write:
//
//   - Envoy's x-forwarded-client-cert (when header is that name): one
//     element, "Hash=<hex SHA-256>;Cert=\"<URL-encoded PEM>\";Chain=...",
//     as Envoy writes it with forward_client_cert_details SANITIZE_SET;
//     an element per hop (APPEND_FORWARD) is refused, since which one is
//     the client's depends on the chain of proxies, and so is an element
//     that gives Hash, Cert or Chain twice;
//   - a PEM certificate (Apache's %{SSL_CLIENT_CERT}s, with its line ends
//     as spaces or not);
//   - the same URL-encoded (nginx's $ssl_client_escaped_cert);
//   - base64 DER (IIS ARR's X-ARR-ClientCert, ASP.NET's X-Client-Cert) or
//     hex DER;
//   - RFC 9440's Client-Cert: the DER as a structured field's byte
//     sequence, base64 between colons (":MIIB...:"), as HAProxy writes it
//     with ":%[ssl_c_der,base64]:" (docs/GATEWAY.md's recipe).
//
// A value of these forms that holds more than one certificate is refused:
// none of these proxies sends a chain there, and a proxy that appends its
// own value to the client's, rather than replacing it, would otherwise
// let the client's come first. It returns the DER certificates, the
// client's first (and, from Envoy's Chain, its intermediates), and for
// Envoy the SHA-256 of the client's certificate when the element gives
// it (its Hash), in which case the DER may be absent.
func Decode(header, value string) (ders [][]byte, hash []byte, err error) {
	value = strings.TrimSpace(value)
	if strings.EqualFold(header, "X-Forwarded-Client-Cert") {
		return decodeXFCC(value)
	}
	ders, err = decodeValue(value)
	return ders, nil, err
}

// decodeValue reads a PEM, URL-encoded PEM, base64, hex or RFC 9440
// value.
func decodeValue(v string) ([][]byte, error) {
	if len(v) > 2 && v[0] == ':' && v[len(v)-1] == ':' {
		// RFC 9440 §2.2: one sf-binary, base64 (RFC 8941 §3.3.5); a list
		// of them (a chain) is Client-Cert-Chain's, never this header's.
		der, err := base64.StdEncoding.DecodeString(v[1 : len(v)-1])
		if err != nil || len(der) == 0 || der[0] != 0x30 {
			return nil, errUnreadable
		}
		return [][]byte{der}, nil
	}
	if strings.HasPrefix(v, "%") || strings.HasPrefix(v, "-----BEGIN%20") {
		u, err := url.PathUnescape(v) // not QueryUnescape: base64 holds "+"
		if err != nil {
			return nil, errUnreadable
		}
		v = u
	}
	if strings.HasPrefix(v, "-----BEGIN") {
		ders, err := decodePEM(v)
		if err == nil && len(ders) > 1 {
			return nil, errTwoCertificates
		}
		return ders, err
	}
	if der, err := hex.DecodeString(v); err == nil && len(der) > 0 && der[0] == 0x30 {
		return [][]byte{der}, nil
	}
	if der := decodeBase64(v); len(der) > 0 && der[0] == 0x30 { // a DER SEQUENCE
		return [][]byte{der}, nil
	}
	return nil, errUnreadable
}

const (
	pemBegin = "-----BEGIN CERTIFICATE-----"
	pemEnd   = "-----END CERTIFICATE-----"
)

// decodePEM reads the certificates of a PEM text whose line ends may have
// become spaces (or have gone) on their way through a header.
func decodePEM(v string) ([][]byte, error) {
	var ders [][]byte
	for {
		_, rest, ok := strings.Cut(v, pemBegin)
		if !ok {
			break
		}
		body, after, ok := strings.Cut(rest, pemEnd)
		if !ok {
			return nil, errUnreadable
		}
		der := decodeBase64(body)
		if len(der) == 0 {
			return nil, errUnreadable
		}
		ders = append(ders, der)
		v = after
	}
	if len(ders) == 0 {
		return nil, errUnreadable
	}
	return ders, nil
}

// decodeBase64 decodes standard or URL base64, padded or not, ignoring
// white space; nil when it is none.
func decodeBase64(s string) []byte {
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b
		}
	}
	return nil
}

// decodeXFCC reads Envoy's x-forwarded-client-cert: one element of
// key=value pairs separated by ";", a value quoted when it holds a
// separator ("\"" escaped by a backslash), the keys without regard to
// case. Hash, Cert and Chain, which Envoy writes once each, are refused
// given twice: which of the two is the client's would depend on the
// order read.
func decodeXFCC(v string) ([][]byte, []byte, error) {
	pairs, err := splitXFCC(v)
	if err != nil {
		return nil, nil, err
	}
	var leaf, hash []byte
	var chain [][]byte
	for _, p := range pairs {
		switch strings.ToLower(p[0]) {
		case "hash":
			h, err := hex.DecodeString(p[1])
			if err != nil || len(h) != sha256.Size || hash != nil {
				return nil, nil, errXFCC
			}
			hash = h
		case "cert", "chain":
			pem, err := url.PathUnescape(p[1])
			if err != nil {
				return nil, nil, errXFCC
			}
			ders, err := decodePEM(pem)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case strings.EqualFold(p[0], "cert") && leaf == nil:
				leaf = ders[0]
			case strings.EqualFold(p[0], "chain") && chain == nil:
				chain = ders // the client's certificate, then its intermediates
			default:
				return nil, nil, errXFCC // a key twice: which is the client's?
			}
		}
	}
	if leaf == nil && len(chain) > 0 {
		leaf = chain[0]
	}
	switch {
	case leaf == nil && hash == nil:
		return nil, nil, errXFCC
	case leaf == nil:
		return nil, hash, nil
	case hash != nil && sha256.Sum256(leaf) != [sha256.Size]byte(hash):
		return nil, nil, errXFCC // a proxy that contradicts itself is believed in neither
	}
	ders := [][]byte{leaf}
	if len(chain) > 1 {
		ders = append(ders, chain[1:]...)
	}
	return ders, hash, nil
}

// splitXFCC splits one XFCC element into its key=value pairs, unquoting
// the values; a "," outside quotes (a second element) is an error.
func splitXFCC(v string) ([][2]string, error) {
	var pairs [][2]string
	for v != "" {
		key, rest, ok := strings.Cut(v, "=")
		if !ok {
			return nil, errXFCC
		}
		key = strings.TrimSpace(key)
		var val strings.Builder
		i := 0
		if strings.HasPrefix(rest, `"`) {
			i = 1
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				val.WriteByte(rest[i])
			}
			if i == len(rest) {
				return nil, errXFCC // no closing quote
			}
			i++
		} else {
			for ; i < len(rest) && rest[i] != ';' && rest[i] != ','; i++ {
				val.WriteByte(rest[i])
			}
		}
		pairs = append(pairs, [2]string{key, val.String()})
		rest = strings.TrimLeft(rest[i:], " ")
		switch {
		case rest == "":
			v = ""
		case rest[0] == ';':
			v = rest[1:]
		default: // "," starts another element, or garbage follows a quote
			return nil, errXFCC
		}
	}
	return pairs, nil
}
