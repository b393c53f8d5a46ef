package main

import (
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/pem"
	"fmt"
	"io"
	"net"
)

// The certificates of testdata/mtls (README.md there tells how they were
// made): the example CA, the server's for 127.0.0.1 and localhost, and,
// beside them, demo-mtls's, which the banner's curl lines present. The
// service serves with the embedded ones, so that it runs from anywhere.
var (
	//go:embed testdata/mtls/ca.pem
	mtlsCA []byte
	//go:embed testdata/mtls/server.pem
	mtlsServerCert []byte
	//go:embed testdata/mtls/server-key.pem
	mtlsServerKey []byte
)

// exampleCA is the example CA, under which demo-mtls's certificate is
// issued: the demo configuration's mtls.clientCAs.
func exampleCA() *x509.Certificate {
	block, _ := pem.Decode(mtlsCA)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		panic("examplesvc: the embedded example CA: " + err.Error()) // embedded: cannot fail
	}
	return c
}

// mtlsTLSConfig is the TLS configuration of the mutual TLS listener: the
// example server certificate, and a request for a client certificate,
// any: the issuer checks the chains of tls_client_auth clients itself
// (to the CAs of mtls.clientCAs), self-signed clients have none, and an
// API needs only the possession that the handshake proves.
func mtlsTLSConfig() (*tls.Config, error) {
	cert, err := tls.X509KeyPair(mtlsServerCert, mtlsServerKey)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}, nil
}

// mtlsBase is the base URL of the mutual TLS listener at addr, as clients
// reach it: an unspecified host is 127.0.0.1, which the server
// certificate names.
func mtlsBase(addr net.Addr) string {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, port)
}

// printMTLSBanner tells how to call the mutual TLS listener at base; for
// the demo configuration, with demo-mtls's curl lines, run from the
// repository's root.
func printMTLSBanner(w io.Writer, base string, demo bool) {
	fmt.Fprintf(w, "\nMutual TLS (RFC 8705) %s: the identity service (its discovery names this\n", base)
	fmt.Fprintln(w, "listener in mtls_endpoint_aliases) and the APIs, asking clients for a certificate.")
	if !demo {
		return
	}
	const dir = "examplesvc/testdata/mtls"
	certs := fmt.Sprintf("--cacert %[1]s/ca.pem --cert %[1]s/demo-mtls.pem --key %[1]s/demo-mtls-key.pem", dir)
	fmt.Fprintf(w, `demo-mtls authenticates with its certificate (tls_client_auth, CN=demo-mtls) and
gets a token bound to it (cnf x5t#S256), which the APIs take over a connection
that presents the same certificate, and no other (from the repository's root):

  TOKEN=$(curl -s %[2]s -d grant_type=client_credentials -d client_id=demo-mtls -d scope=pd_AdminWebApi %[1]s/ids/connect/token | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
  curl -s %[2]s -H "Authorization: Bearer $TOKEN" '%[1]s/webapi/api/v3/demo/Admin/Users?page=1&pageSize=10'
`, base, certs)
}
