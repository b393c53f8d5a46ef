package main

import (
	"bufio"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/keys"
)

// defaultSecretEnv is the environment variable token reads the secret
// from when it is set.
const defaultSecretEnv = "IDSAUTH_CLIENT_SECRET"

func token(ctx context.Context, e env, args []string) error {
	fs := flags(e, "token", "-issuer URL -client-id ID [-scope S] [-key FILE | -assertion-file FILE] [-cert FILE] [-dpop-key FILE] [-resource URI]... [-param NAME=VALUE]... [-decode]",
		`Fetch an access token with the client_credentials grant from the issuer's
token endpoint (found by its discovery document) and print it; with -decode,
print its header and claims instead. With -key, the client authenticates
with a JWT signed by that private key (private_key_jwt, RFC 7523), and no
secret is read. With -assertion-file, the client authenticates with the
workload's token in that file (a Kubernetes projected service-account
token, a JWT-SVID: a token of an issuer the client's federated credentials
trust), read as it is now. With -cert, the client presents that certificate over
mutual TLS (RFC 8705), -key being the certificate's key (when the -cert file
does not hold it), at the token endpoint's mutual TLS alias when discovery
names one: it authenticates with it, unless -secret-file, -secret-env or
`+defaultSecretEnv+` gives a secret, and the issuer may bind the token to
it. Otherwise the client secret is read from -secret-file, else from the
environment variable named by -secret-env (by default `+defaultSecretEnv+`,
if set), else from the terminal without echo (or one line of standard
input); never from a flag. The issuer URL is -issuer, else IDSAUTH_ISSUER.`)
	var cf credentialFlags
	cf.register(fs)
	var resources []string
	fs.Func("resource", "ask for a token for this audience (RFC 8707); repeatable", func(v string) error {
		resources = append(resources, v)
		return nil
	})
	params := url.Values{}
	fs.Func("param", "an extra token request parameter, name=value (ORY Hydra's audience=URI, say); repeatable; never one the request sets itself", func(v string) error {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return fmt.Errorf("%q: want name=value", v)
		}
		params.Add(name, value)
		return clientauth.CheckParams(params)
	})
	dpopKey := fs.String("dpop-key", "", "bind the token to this PEM private key (DPoP, RFC 9449): the request carries a proof by it")
	decodeIt := fs.Bool("decode", false, "print the token's header and claims instead of the token")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (the secret is never an argument: see -h)", fs.Arg(0))
	}
	cfg, err := cf.config(e)
	if err != nil {
		return err
	}
	cfg.Resources, cfg.EndpointParams = resources, params
	if *dpopKey != "" {
		if cfg.DPoPKey, err = readKey(*dpopKey); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	if cfg.TokenURL, err = discoverTokenURL(ctx, cfg.HTTPClient, cf.issuer, cf.certFile != ""); err != nil {
		return err
	}
	// client follows no redirect with a token request: it carries the
	// credentials.
	tok, err := cfg.TokenSource(ctx).Token()
	if err != nil {
		var te *client.TokenError
		if errors.As(err, &te) && te.Code != "" {
			msg := te.Code
			if te.Description != "" {
				msg += ": " + te.Description
			}
			return fmt.Errorf("the token endpoint refused: %s (HTTP %d)", msg, te.StatusCode)
		}
		return fmt.Errorf("token request: %w", err)
	}
	if *dpopKey != "" && tok.TokenType != "DPoP" {
		fmt.Fprintf(e.stderr, "idsauth token: the issuer answered token_type %q: the token is not bound to the DPoP key\n", tok.TokenType)
	}
	if *decodeIt {
		return printDecoded(e.stdout, tok.AccessToken)
	}
	fmt.Fprintln(e.stdout, tok.AccessToken)
	return nil
}

// credentialFlags are a client's: the issuer, the client ID, the scopes
// and the credential, as token and conformance take them.
type credentialFlags struct {
	issuer, clientID, scopes            string
	keyFile, kid, alg, certFile, caFile string
	secretFile, secretEnv               string
	assertionFile                       string // a workload's token, else ""
	spiffe                              bool   // assertionFile is a JWT-SVID
	timeout                             time.Duration
}

func (c *credentialFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.issuer, "issuer", "", "the issuer URL, e.g. https://host/ids (required; IDSAUTH_ISSUER)")
	fs.StringVar(&c.clientID, "client-id", "", "the client ID (required)")
	fs.StringVar(&c.scopes, "scope", "", "the scopes to ask for, space-separated (none: the issuer's default for the client)")
	fs.StringVar(&c.keyFile, "key", "", "authenticate with this PEM private key (private_key_jwt) instead of a secret")
	fs.StringVar(&c.kid, "kid", "", "with -key, the assertion's kid (default: the key's RFC 7638 thumbprint)")
	fs.StringVar(&c.alg, "alg", "", "with -key, ES256, RS256, PS256 or EdDSA (default: the one that fits the key, RS256 for RSA)")
	fs.StringVar(&c.assertionFile, "assertion-file", "", "authenticate with the workload's token in this file (a projected service-account token, a JWT-SVID) instead of a secret")
	fs.BoolVar(&c.spiffe, "spiffe", false, "with -assertion-file, send it as a JWT-SVID (client_assertion_type jwt-spiffe)")
	fs.StringVar(&c.certFile, "cert", "", "present this PEM client certificate (mutual TLS, RFC 8705), with -key its private key")
	fs.StringVar(&c.caFile, "cacert", "", "trust this PEM CA for the issuer's TLS certificate, beside the system's")
	fs.StringVar(&c.secretFile, "secret-file", "", "read the client secret from the first line of this file")
	fs.StringVar(&c.secretEnv, "secret-env", "", "read the client secret from this environment variable")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "give up after this long")
}

// config is the client the flags describe, its HTTP client trusting
// -cacert; its TokenURL is left to discovery.
func (c *credentialFlags) config(e env) (client.Config, error) {
	if c.issuer == "" {
		c.issuer = e.getenv("IDSAUTH_ISSUER")
	}
	switch {
	case c.issuer == "" || c.clientID == "":
		return client.Config{}, usagef("-issuer and -client-id are required")
	case (c.keyFile == "" || c.certFile != "") && (c.kid != "" || c.alg != ""):
		return client.Config{}, usagef("-kid and -alg go with -key, without -cert")
	case c.keyFile != "" && c.certFile == "" && (c.secretFile != "" || c.secretEnv != ""):
		return client.Config{}, usagef("-key or a secret, not both")
	case c.assertionFile != "" && (c.keyFile != "" || c.secretFile != "" || c.secretEnv != ""):
		return client.Config{}, usagef("-assertion-file is the client's credential: no -key or secret beside it")
	case c.spiffe && c.assertionFile == "":
		return client.Config{}, usagef("-spiffe goes with -assertion-file")
	}
	cfg := client.Config{ClientID: c.clientID, Scopes: strings.Fields(c.scopes), KeyAlg: c.alg, KeyID: c.kid, FetchTimeout: c.timeout}
	var err error
	switch {
	case c.certFile != "":
		// The certificate authenticates, unless a secret is given without
		// asking for one: a client that binds its tokens to it.
		if cfg.Certificate, err = readCertificate(c.certFile, c.keyFile); err == nil && (c.secretFile != "" || c.secretEnv != "" || e.getenv(defaultSecretEnv) != "") {
			cfg.ClientSecret, err = clientSecret(e, c.secretFile, c.secretEnv)
		}
	case c.keyFile != "":
		cfg.Key, err = readKey(c.keyFile)
	case c.assertionFile != "":
		cfg.AssertionFile = c.assertionFile
		if c.spiffe {
			cfg.AssertionType = client.AssertionJWTSPIFFE
		}
	default:
		cfg.ClientSecret, err = clientSecret(e, c.secretFile, c.secretEnv)
	}
	if err != nil {
		return client.Config{}, err
	}
	cfg.HTTPClient = &http.Client{Timeout: c.timeout}
	if c.caFile != "" {
		if cfg.HTTPClient.Transport, err = trusting(c.caFile); err != nil {
			return client.Config{}, err
		}
	}
	return cfg, nil
}

// readKey reads a PEM private key: a client's key for private_key_jwt,
// or a DPoP key.
func readKey(file string) (crypto.Signer, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	key, err := keys.ParsePEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return key, nil
}

// clientSecret reads the secret from a file, an environment variable, or
// the terminal (or standard input), in that order.
func clientSecret(e env, file, envName string) (string, error) {
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		defer f.Close()
		line, err := bufio.NewReader(io.LimitReader(f, 4<<10)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		if line = strings.TrimRight(line, "\r\n"); line == "" {
			return "", fmt.Errorf("%s: no secret on its first line", file)
		}
		return line, nil
	}
	name := envName
	if name == "" && e.getenv(defaultSecretEnv) != "" {
		name = defaultSecretEnv
	}
	if name != "" {
		if v := e.getenv(name); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("the environment variable %s is empty", name)
	}
	return readSecret(e, "Client secret: ")
}

// readCertificate reads a client certificate (chain) and its key, from
// keyFile, or from certFile when keyFile is empty.
func readCertificate(certFile, keyFile string) (*tls.Certificate, error) {
	if keyFile == "" {
		keyFile = certFile
	}
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("-cert %s: %w", certFile, err)
	}
	return &c, nil
}

// trusting is a transport that trusts the CAs of caFile beside the
// system's.
func trusting(caFile string) (*http.Transport, error) {
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("-cacert %s: no PEM certificate in it", caFile)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool}
	return t, nil
}

// discoverTokenURL reads the token endpoint from the issuer's discovery
// document, whose issuer must be the one asked for; for a client that
// presents a certificate, its mutual TLS alias when it names one (RFC
// 8705 §5: such a client must use it).
func discoverTokenURL(ctx context.Context, hc *http.Client, issuer string, mtls bool) (string, error) {
	issuer = strings.TrimSuffix(issuer, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		return "", usagef("-issuer %q: %v", issuer, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("discovery: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("discovery: %s answered %s; is -issuer the issuer URL (e.g. https://host/ids)?", req.URL, resp.Status)
	}
	var doc struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
		Aliases       struct {
			TokenEndpoint string `json:"token_endpoint"`
		} `json:"mtls_endpoint_aliases"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return "", fmt.Errorf("discovery: %s is not a discovery document: %v", req.URL, err)
	}
	if doc.Issuer != issuer {
		return "", fmt.Errorf("discovery: the document names issuer %q, not %q", doc.Issuer, issuer)
	}
	if doc.TokenEndpoint == "" {
		return "", errors.New("discovery: the document has no token_endpoint")
	}
	if mtls && doc.Aliases.TokenEndpoint != "" {
		return doc.Aliases.TokenEndpoint, nil
	}
	return doc.TokenEndpoint, nil
}
