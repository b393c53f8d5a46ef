package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/kit"
)

// issuerMetadata is what the runner reads of an issuer's discovery
// document.
type issuerMetadata struct {
	Issuer                string   `json:"issuer"`
	TokenEndpoint         string   `json:"token_endpoint"`
	JWKSURI               string   `json:"jwks_uri"`
	IntrospectionEndpoint string   `json:"introspection_endpoint"`
	RevocationEndpoint    string   `json:"revocation_endpoint"`
	ScopesSupported       []string `json:"scopes_supported"`
	DPoPAlgs              []string `json:"dpop_signing_alg_values_supported"`
	CertificateBound      bool     `json:"tls_client_certificate_bound_access_tokens"`
	Aliases               struct {
		TokenEndpoint string `json:"token_endpoint"`
	} `json:"mtls_endpoint_aliases"`
}

// discoverIssuer reads the issuer's OpenID Connect discovery document,
// else its RFC 8414 metadata; its "issuer" must be the one asked for.
func discoverIssuer(ctx context.Context, hc *http.Client, issuer string) (*issuerMetadata, error) {
	issuer = strings.TrimSuffix(issuer, "/")
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, usagef("-issuer %q: not a URL", issuer)
	}
	var last error
	for _, doc := range []string{issuer + "/.well-known/openid-configuration", u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.EscapedPath(), "/")} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, doc, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		var m issuerMetadata
		err = json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&m)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound:
			last = fmt.Errorf("discovery: %s answered %s", doc, resp.Status)
			continue
		case resp.StatusCode != http.StatusOK || err != nil:
			return nil, fmt.Errorf("discovery: %s answered %s, not a metadata document", doc, resp.Status)
		case m.Issuer != issuer:
			return nil, fmt.Errorf("discovery: the document names issuer %q, not %q", m.Issuer, issuer)
		case m.TokenEndpoint == "":
			return nil, fmt.Errorf("discovery: the document names no token_endpoint")
		}
		return &m, nil
	}
	return nil, last
}

// runnerTokens are the tokens of idsauth conformance: the good ones from
// the issuer, with the client's credentials (the client_credentials
// grant); the ones a client cannot make the issuer sign (expired, of
// another issuer, ...) forged with a key of the runner's own, which the
// API must refuse all the same; and, where neither can be had, a reason.
type runnerTokens struct {
	ctx    context.Context
	cfg    client.Config // the client, its TokenURL found
	meta   *issuerMetadata
	other  []string // a scope the route does not need: -other-scope, else scopes_supported's
	forger *clientauth.Signer
	prover *clientauth.Signer   // the runner's DPoP key
	goods  map[string]kit.Token // Good's, by scopes, reused
}

func newRunnerTokens(ctx context.Context, cfg client.Config, meta *issuerMetadata, otherScope string) (*runnerTokens, error) {
	rt := &runnerTokens{ctx: ctx, cfg: cfg, meta: meta, goods: map[string]kit.Token{}}
	if otherScope != "" {
		rt.other = []string{otherScope}
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if rt.forger, err = clientauth.NewSigner(k, "ES256", ""); err != nil {
		return nil, err
	}
	if rt.prover, _, err = kit.NewProver(); err != nil {
		return nil, err
	}
	return rt, nil
}

// fetch asks the issuer for a token with scopes, bound to the runner's
// DPoP key with dpop, presenting cert over mutual TLS when not nil.
func (rt *runnerTokens) fetch(scopes []string, dpop bool, cert *tls.Certificate) (string, string, error) {
	cfg := rt.cfg
	cfg.Scopes = scopes
	if dpop {
		cfg.DPoPKey = rt.prover.Key()
	}
	if cert != nil {
		cfg.Certificate = cert
		if rt.meta.Aliases.TokenEndpoint != "" {
			cfg.TokenURL = rt.meta.Aliases.TokenEndpoint
		}
	}
	tok, err := cfg.TokenSource(rt.ctx).Token()
	if err != nil {
		return "", "", err
	}
	return tok.AccessToken, tok.TokenType, nil
}

func (rt *runnerTokens) from(scopes []string) string {
	return "the issuer: client_credentials for " + strings.Join(scopes, " ")
}

// Good is a token for need from the issuer.
func (rt *runnerTokens) Good(need []string) kit.Token {
	key := strings.Join(need, " ")
	if t, ok := rt.goods[key]; ok {
		return t
	}
	t := kit.Token{Source: rt.from(need)}
	tok, _, err := rt.fetch(need, false, nil)
	if err != nil {
		t.Skip = "the issuer gave no token: " + err.Error()
	}
	t.Value = tok
	rt.goods[key] = t
	return t
}

// otherScopes are the scopes to try for a token without need: -other-scope,
// else those scopes_supported names beside need (the first the issuer
// grants the client is taken).
func (rt *runnerTokens) otherScopes(need []string) []string {
	if len(rt.other) > 0 {
		return rt.other
	}
	var out []string
	for _, s := range rt.meta.ScopesSupported {
		if !slices.Contains(need, s) && s != "openid" && s != "offline_access" {
			out = append(out, s)
		}
	}
	return out
}

func (rt *runnerTokens) otherScope(need []string, dpop bool, cert *tls.Certificate) kit.Token {
	for _, s := range rt.otherScopes(need) {
		if tok, _, err := rt.fetch([]string{s}, dpop, cert); err == nil {
			src := rt.from([]string{s})
			switch {
			case dpop:
				src += ", with a DPoP proof by a key of the runner's"
			case cert != nil:
				src += ", over mutual TLS with -cert"
			}
			return kit.Token{Value: tok, Source: src}
		}
	}
	return kit.Token{Skip: "no other scope the issuer grants the client (give -other-scope, a scope of the client's that the route does not take)"}
}

func (rt *runnerTokens) OtherScope(need []string) kit.Token { return rt.otherScope(need, false, nil) }

// claims are a forged token's: the good token's when it is a JWT, else
// the issuer's and the client's.
func (rt *runnerTokens) claims(need []string) map[string]any {
	c := map[string]any{}
	if g := rt.Good(need); g.Skip == "" && strings.Count(g.Value, ".") == 2 {
		if b, err := base64.RawURLEncoding.DecodeString(strings.Split(g.Value, ".")[1]); err == nil {
			_ = json.Unmarshal(b, &c)
		}
	}
	now := time.Now()
	if len(c) == 0 {
		c = map[string]any{"iss": rt.meta.Issuer, "sub": rt.cfg.ClientID, "client_id": rt.cfg.ClientID, "aud": rt.meta.Issuer + "/resources", "scope": strings.Join(need, " ")}
	}
	c["iat"], c["nbf"], c["exp"], c["jti"] = now.Unix(), now.Unix(), now.Add(time.Hour).Unix(), rand.Text()
	return c
}

const forgedSource = "forged: signed by a key of the runner's own, which the API must refuse"

func (rt *runnerTokens) forge(need []string, edit func(c map[string]any)) kit.Token {
	c := rt.claims(need)
	edit(c)
	tok, err := rt.forger.Sign("a forged token", map[string]string{"typ": "at+jwt", "alg": "ES256", "kid": rt.forger.KeyID()}, c)
	if err != nil {
		return kit.Token{Skip: err.Error()}
	}
	return kit.Token{Value: tok, Source: forgedSource}
}

func (rt *runnerTokens) Expired(need []string) kit.Token {
	return rt.forge(need, func(c map[string]any) {
		past := time.Now().Add(-2 * time.Hour)
		c["iat"], c["nbf"], c["exp"] = past.Unix(), past.Unix(), past.Add(time.Hour).Unix()
	})
}

func (rt *runnerTokens) NotYetValid(need []string) kit.Token {
	return rt.forge(need, func(c map[string]any) {
		c["nbf"], c["exp"] = time.Now().Add(time.Hour).Unix(), time.Now().Add(2*time.Hour).Unix()
	})
}

func (rt *runnerTokens) UnknownKey(need []string) kit.Token {
	t := rt.forge(need, func(map[string]any) {})
	t.Source = "forged: signed by a key of the runner's own, which the issuer does not publish"
	return t
}

func (rt *runnerTokens) WrongIssuer(need []string) kit.Token {
	return rt.forge(need, func(c map[string]any) { c["iss"] = "https://conformance.invalid/another-issuer" })
}

func (rt *runnerTokens) WrongAudience(need []string) kit.Token {
	return rt.forge(need, func(c map[string]any) { c["aud"] = []string{"https://conformance.invalid/another-api"} })
}

// Bound is a DPoP-bound token of the issuer's, when it offers DPoP,
// presented as Bearer; else one forged with cnf.jkt.
func (rt *runnerTokens) Bound(need []string) kit.Token {
	if len(rt.meta.DPoPAlgs) > 0 {
		if tok, typ, err := rt.fetch(need, true, nil); err == nil && strings.EqualFold(typ, "DPoP") {
			return kit.Token{Value: tok, Source: "the issuer: a token bound to a DPoP key of the runner's (cnf.jkt), presented as Bearer"}
		}
	}
	return rt.forge(need, func(c map[string]any) {
		c["cnf"] = map[string]string{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}
	})
}

// Tampered is the issuer's token with one character of its signature
// (or, opaque, of its middle) changed.
func (rt *runnerTokens) Tampered(need []string) kit.Token {
	g := rt.Good(need)
	if g.Skip != "" {
		return g
	}
	i := len(g.Value) - 2
	if strings.Count(g.Value, ".") != 2 {
		i = len(g.Value) / 2
	}
	repl := byte('A')
	if g.Value[i] == 'A' {
		repl = 'B'
	}
	return kit.Token{Value: g.Value[:i] + string(repl) + g.Value[i+1:], Source: "the issuer's token, one character changed"}
}

// AlgNone is the issuer's claims, unsigned.
func (rt *runnerTokens) AlgNone(need []string) kit.Token {
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "at+jwt"})
	c, _ := json.Marshal(rt.claims(need))
	enc := base64.RawURLEncoding
	return kit.Token{Value: enc.EncodeToString(h) + "." + enc.EncodeToString(c) + ".", Source: "forged: the issuer's claims, unsigned (alg none)"}
}

// Reference is another of the client's tokens when they are opaque.
func (rt *runnerTokens) Reference(need []string) kit.Token {
	g := rt.Good(need)
	switch {
	case g.Skip != "":
		return g
	case strings.Count(g.Value, ".") == 2:
		return kit.Token{Skip: "the client's tokens are JWTs: it gets no reference token (give a client whose tokens are)"}
	}
	tok, _, err := rt.fetch(need, false, nil)
	if err != nil {
		return kit.Token{Skip: err.Error()}
	}
	return kit.Token{Value: tok, Source: "the issuer: a reference token, client_credentials for " + strings.Join(need, " ")}
}

// RevokedReference is a reference token the client revoked at the
// revocation endpoint (RFC 7009) discovery names.
func (rt *runnerTokens) RevokedReference(need []string) kit.Token {
	ref := rt.Reference(need)
	switch {
	case ref.Skip != "":
		return ref
	case rt.meta.RevocationEndpoint == "":
		return kit.Token{Skip: "the issuer names no revocation_endpoint"}
	}
	if err := rt.revoke(ref.Value); err != nil {
		return kit.Token{Skip: "revoking a reference token: " + err.Error()}
	}
	return kit.Token{Value: ref.Value, Source: "the issuer: a reference token, revoked at its revocation endpoint"}
}

// revoke revokes tok at the revocation endpoint, authenticating as the
// token request does.
func (rt *runnerTokens) revoke(tok string) error {
	form := url.Values{"token": {tok}}
	h, err := authenticated(rt.cfg, form)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(rt.ctx, http.MethodPost, rt.meta.RevocationEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header = h
	resp, err := rt.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}

func (rt *runnerTokens) ReferenceOtherScope(need []string) kit.Token {
	if ref := rt.Reference(need); ref.Skip != "" {
		return ref
	}
	return rt.OtherScope(need)
}

// DPoP is a token of the issuer's bound to the runner's DPoP key.
func (rt *runnerTokens) DPoP(need []string) (kit.Token, *clientauth.Signer) {
	if len(rt.meta.DPoPAlgs) == 0 {
		return kit.Token{Skip: "the issuer offers no DPoP (its metadata names no dpop_signing_alg_values_supported)"}, nil
	}
	tok, typ, err := rt.fetch(need, true, nil)
	switch {
	case err != nil:
		return kit.Token{Skip: "the issuer gave no DPoP-bound token: " + err.Error()}, nil
	case !strings.EqualFold(typ, "DPoP"):
		return kit.Token{Skip: "the issuer answered token_type " + typ + " to a request with a proof"}, nil
	}
	return kit.Token{Value: tok, Source: "the issuer: client_credentials with a DPoP proof by a key of the runner's"}, rt.prover
}

func (rt *runnerTokens) DPoPOtherScope(need []string) kit.Token {
	return rt.otherScope(need, true, nil)
}

// CertificateBound is a token of the issuer's bound to -cert.
func (rt *runnerTokens) CertificateBound(need []string) (kit.Token, *tls.Certificate) {
	cert := rt.cfg.Certificate
	if cert == nil {
		return kit.Token{Skip: "no -cert: the runner has no client certificate to bind a token to"}, nil
	}
	tok, _, err := rt.fetch(need, false, cert)
	if err != nil {
		return kit.Token{Skip: "the issuer gave no token over mutual TLS: " + err.Error()}, nil
	}
	if !boundTo(tok, cert) {
		return kit.Token{Skip: "the issuer did not bind the token to -cert (no cnf x5t#S256 of it)"}, nil
	}
	return kit.Token{Value: tok, Source: "the issuer: client_credentials over mutual TLS with -cert, bound to it"}, cert
}

func (rt *runnerTokens) CertificateBoundOtherScope(need []string, cert *tls.Certificate) kit.Token {
	return rt.otherScope(need, false, cert)
}

// OtherCertificate is a self-signed certificate of the runner's, made now.
func (rt *runnerTokens) OtherCertificate() *tls.Certificate {
	c, err := selfSigned("idsauth conformance: another certificate")
	if err != nil {
		return nil
	}
	return c
}

// boundTo reports whether tok, a JWT, is bound to cert (cnf x5t#S256).
func boundTo(tok string, cert *tls.Certificate) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || cert.Leaf == nil {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var c struct {
		Cnf map[string]string `json:"cnf"`
	}
	return json.Unmarshal(b, &c) == nil && clientcert.Equal(c.Cnf["x5t#S256"], clientcert.Thumbprint(cert.Leaf.Raw))
}

// selfSigned makes a self-signed client certificate with its key.
func selfSigned(cn string) (*tls.Certificate, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k, Leaf: leaf}, nil
}
