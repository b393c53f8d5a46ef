package client

import (
	"crypto/tls"
	"errors"
	"net/http"
)

// withCertificate returns hc (http.DefaultClient when nil) with its
// transport presenting the configuration's client certificate at every
// TLS handshake (RFC 8705), for the token requests and the calls alike:
// a clone of its *http.Transport (http.DefaultTransport when nil) whose
// TLS configuration gives the certificate whatever CAs the server names.
// hc is unchanged; with no certificate it is returned as it is.
func (c *Config) withCertificate(hc *http.Client) (*http.Client, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	get := c.GetCertificate
	switch {
	case c.Certificate == nil && get == nil:
		return hc, nil
	case c.Certificate != nil && get != nil:
		return hc, errors.New("client: set Config.Certificate or Config.GetCertificate, not both")
	case get == nil:
		cert := c.Certificate
		get = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		return hc, errors.New("client: Config.Certificate needs Config.HTTPClient's Transport to be an *http.Transport (or nil), to present the certificate over its TLS connections")
	}
	t = t.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{}
	}
	t.TLSClientConfig.Certificates = nil
	t.TLSClientConfig.GetClientCertificate = get
	out := *hc
	out.Transport = t
	return &out, nil
}
