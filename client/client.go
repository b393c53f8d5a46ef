// Package client is the calling side of the contract ([the contract] §5): an
// *http.Client that gets an access token by the client_credentials grant,
// caches it, renews it shortly before it expires, and, when the service
// rejects it early with invalid_token (a rotated key, a revoked token,
// skewed clocks), fetches one new token and retries the call once.
//
//	cfg := client.Config{
//		ClientID:     "reporting",
//		ClientSecret: os.Getenv("REPORTING_SECRET"),
//		BaseURL:      "https://docs.example.com",
//		Scopes:       []string{scope.AdminWebAPI},
//	}
//	hc := cfg.Client(ctx)
//	resp, err := hc.Get("https://docs.example.com/webapi/api/v3/demo/Admin/Users")
//
// The token goes only to the service: to requests for the origin (scheme,
// host and port) of BaseURL, or of Config.Origins. A request for any other
// origin, a redirect to one included, is sent as it is, without the
// token. x/oauth2's Transport attaches its token to every request and
// every redirect, wherever it goes.
//
// Tokens come from golang.org/x/oauth2/clientcredentials. This package adds
// what it leaves out: the retry on invalid_token (exactly once, never with
// the same token), one token request for any number of concurrent callers,
// waits bounded by each caller's context, typed errors, and client
// authentication by a signed JWT (private_key_jwt, Config.Key) instead of
// a secret, with a fresh assertion for every token request.
//
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package client

import (
	"context"
	"crypto"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/origin"
)

// Config describes a client of the service.
type Config struct {
	// ClientID and ClientSecret are the client's registered credentials.
	// Set ClientSecret or Key, not both.
	ClientID     string
	ClientSecret string

	// Key, instead of ClientSecret, authenticates the client with a JWT
	// it signs (private_key_jwt, [RFC 7523] §2.2; OpenID Connect Core §9):
	// every token request carries a new assertion, with iss and sub the
	// ClientID, aud the issuer (see Issuer), a fresh jti and a lifetime
	// of one minute. It may be any crypto.Signer (a key in a KMS or an HSM): an
	// ECDSA P-256, RSA (2048 bits or more) or Ed25519 key. Nil means
	// ClientSecret.
	//
	// [RFC 7523]: https://www.rfc-editor.org/rfc/rfc7523
	Key crypto.Signer
	// KeyID is the "kid" of the assertions' header. Empty means the RFC
	// 7638 thumbprint of Key's public key.
	KeyID string
	// KeyAlg is the assertions' algorithm: "ES256", "RS256", "PS256" or
	// "EdDSA". Empty means the one that fits Key (RS256 for RSA).
	KeyAlg string

	// AssertionFile, instead of ClientSecret or Key, authenticates the
	// client with a workload's token that something else keeps fresh in
	// this file (a Kubernetes projected service-account token, a SPIFFE
	// helper's JWT-SVID): read at each token request, and sent as its
	// client_assertion, with client_id, for an issuer that trusts the
	// token's issuer (its client's federated credentials). Empty means
	// none.
	AssertionFile string
	// AssertionFunc, instead of AssertionFile, gives the token for each
	// token request (from a SPIFFE Workload API, say). Nil means none.
	AssertionFunc func(ctx context.Context) (string, error)
	// AssertionType is the client_assertion_type of AssertionFile's or
	// AssertionFunc's token: AssertionJWTBearer (the default) or
	// AssertionJWTSPIFFE, for a JWT-SVID.
	AssertionType string

	// Resources, when set, are sent as resource parameters ([RFC 8707]):
	// the token is for exactly those audiences, each an absolute URI the
	// client is allowed. Empty means every audience the client has.
	//
	// [RFC 8707]: https://www.rfc-editor.org/rfc/rfc8707
	Resources []string

	// BaseURL is the service's root URL, e.g. "https://docs.example.com":
	// the token URL is BaseURL + "/ids/connect/token" unless TokenURL is
	// set, and the origin of BaseURL (scheme, host and port) is the one
	// that receives the token unless Origins is set.
	BaseURL string
	// TokenURL is the token endpoint. Empty means BaseURL +
	// "/ids/connect/token".
	TokenURL string
	// Issuer is the authorization server's issuer identifier, the "aud"
	// of the client assertions (Key), as draft-ietf-oauth-rfc7523bis
	// requires against audience injection. Empty means BaseURL + "/ids"
	// when TokenURL is empty, and otherwise the token URL, which RFC 7523
	// allowed and servers of its time require.
	Issuer string

	// Origins, when set, are the only origins that receive the token,
	// each written "scheme://host[:port]" (a path is ignored; a missing
	// port is the scheme's default), e.g. "https://api.example.com".
	// Empty means the origin of BaseURL alone; with neither, no request
	// gets the token. Requests for any other origin, redirects included,
	// are sent without it.
	Origins []string

	// Scopes to ask for, e.g. scope.AdminWebAPI.
	Scopes []string

	// EndpointParams are extra parameters of every token request, for a
	// server that wants more than RFC 6749 names: ORY Hydra, for one,
	// takes the token's audience as "audience" and ignores "resource".
	// A parameter the request sets itself (grant_type, scope, resource,
	// client_id, client_secret, client_assertion, client_assertion_type,
	// in any case) is refused: every token request then fails with an
	// error naming it. Nil means none.
	EndpointParams url.Values

	// AuthStyle is how credentials are sent: oauth2.AuthStyleInHeader
	// (HTTP Basic, which every server must accept: RFC 6749 §2.3.1) or
	// oauth2.AuthStyleInParams (form body). Zero means HTTP Basic. (x/oauth2's
	// auto-detection is not used: it sends a wrong secret twice, and an
	// issuer's failure limit counts both.)
	// With Key it is ignored: the assertion goes in the form body.
	AuthStyle oauth2.AuthStyle

	// HTTPClient makes both the token requests and the calls. Nil means
	// http.DefaultClient.
	HTTPClient *http.Client

	// RenewBefore is how long before its expiry a token is renewed. Zero
	// means 30 seconds.
	RenewBefore time.Duration

	// FetchTimeout bounds one token request. Zero means 30 seconds.
	FetchTimeout time.Duration

	// DPoPKey, when set, makes the client's tokens sender-constrained
	// (DPoP, [RFC 9449]): every token request and every call carries a
	// new proof signed by it, and a token the issuer bound to it goes as
	// "Authorization: DPoP <token>" with the proof (ath its hash). A
	// stolen token is useless without the key. An answer that asks for a
	// nonce (use_dpop_nonce, with DPoP-Nonce) is retried once with it, and
	// the nonce is kept for the next requests to that origin. Any
	// crypto.Signer: an ECDSA P-256, RSA (2048 bits or more) or Ed25519
	// key, in memory, a KMS or an HSM. Nil means bearer tokens.
	//
	// [RFC 9449]: https://www.rfc-editor.org/rfc/rfc9449
	DPoPKey crypto.Signer
	// DPoPKeyAlg is the proofs' algorithm: "ES256", "RS256", "PS256" or
	// "EdDSA". Empty means the one that fits DPoPKey (RS256 for RSA).
	DPoPKeyAlg string

	// Certificate, when set, is the client certificate presented in
	// mutual TLS ([RFC 8705]), on the token requests and on the calls,
	// with its private key and the intermediates it needs (as
	// tls.LoadX509KeyPair reads them). With neither ClientSecret nor Key
	// it authenticates the client (tls_client_auth, or
	// self_signed_tls_client_auth): a token request carries client_id in
	// its body and nothing else. The issuer may bind the tokens to it
	// (cnf "x5t#S256"); a service then takes them only over a connection
	// that presents it, which the calls do. When the issuer names a
	// mutual TLS alias of its token endpoint (mtls_endpoint_aliases), set
	// TokenURL to it. Nil means none, unless GetCertificate gives one.
	// HTTPClient's Transport, if set, must be an *http.Transport, which
	// is cloned.
	//
	// [RFC 8705]: https://www.rfc-editor.org/rfc/rfc8705
	Certificate *tls.Certificate
	// GetCertificate, instead of Certificate, gives the certificate at
	// each TLS handshake (tls.Config.GetClientCertificate), for one that
	// is renewed while the client runs: a new connection presents the one
	// it gives then; a connection already open keeps its own.
	GetCertificate func(*tls.CertificateRequestInfo) (*tls.Certificate, error)
}

// MaxRetryAfter bounds how long a Retry-After from the token endpoint
// holds back the next token request. This issuer never asks for more than
// its failure window (a minute by default); a longer one comes from
// something in front of it (a proxy, a WAF) or a misconfiguration, and
// honoured in full it would stop every token request for as long as it
// says (one 429 with Retry-After: 315360000, ten years). Five minutes
// still spares an endpoint that is asking for relief.
const MaxRetryAfter = 5 * time.Minute

// ErrTokenRedirect is the error, inside a *TokenError, of a token endpoint
// that answered with a redirect: a token request never follows one, since
// it carries the client's credentials (a secret, or an assertion the other
// origin could redeem). Set TokenURL to the endpoint itself.
var ErrTokenRedirect = clientauth.ErrRedirect

// TokenError is a failure of the token endpoint, as an OAuth 2.0 error
// answer ([RFC 6749] §5.2) or a transport error.
//
// [RFC 6749]: https://www.rfc-editor.org/rfc/rfc6749
type TokenError struct {
	StatusCode  int           // HTTP status; 0 when no answer came
	Code        string        // "invalid_client", "invalid_scope", "slow_down", ...
	Description string        // error_description, for people
	RetryAfter  time.Duration // from Retry-After, on 429 and 503; at most MaxRetryAfter
	Err         error         // the underlying error
}

func (e *TokenError) Error() string {
	if e.Code == "" {
		return "client: token request failed: " + e.Err.Error()
	}
	s := "client: token request refused: " + e.Code
	if e.Description != "" {
		s += " (" + e.Description + ")"
	}
	return s
}

func (e *TokenError) Unwrap() error { return e.Err }

// InvalidTokenError is returned when the service rejected a freshly
// renewed token with invalid_token too: the problem is not an expired
// token but the token or authentication configuration, and retrying will
// not help. Response is the second 401, its body still readable without
// closing it: its first 64 KiB, then, for a longer body, an error.
type InvalidTokenError struct {
	Code        string // "invalid_token"
	Description string // the service's error_description: for people, not a code
	Response    *http.Response
}

func (e *InvalidTokenError) Error() string {
	s := "client: the service rejected a renewed token: " + e.Code
	if e.Description != "" {
		s += " (" + e.Description + ")"
	}
	return s
}

// Client returns an HTTP client that authenticates every request. ctx
// supplies values (not cancellation) to token requests; each call's own
// context bounds its waits.
//
// A call whose token the service rejects with 401 invalid_token (in the
// JSON body or the WWW-Authenticate challenge) is retried once with a new
// token, if its body can be replayed (http.NewRequest sets GetBody for
// bytes, strings and bytes.Buffer bodies); if not, the 401 comes back as
// is. If the retry is rejected the same way, the call fails with an
// *InvalidTokenError. Every other answer, a 401 without invalid_token and
// a 403 included, comes back untouched.
func (c *Config) Client(ctx context.Context) *http.Client {
	base := c.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	out := *base
	t := c.newTokens(ctx, base)
	out.Transport = &transport{base: t.calls, tokens: t, origins: c.origins(), dpop: t.dpop}
	return &out
}

// authStyle is AuthStyle, with zero meaning HTTP Basic.
func (c *Config) authStyle() oauth2.AuthStyle {
	if c.AuthStyle == oauth2.AuthStyleAutoDetect {
		return oauth2.AuthStyleInHeader
	}
	return c.AuthStyle
}

// origins returns the set of origins that receive the token.
func (c *Config) origins() map[string]bool {
	list := c.Origins
	if len(list) == 0 && c.BaseURL != "" {
		list = []string{c.BaseURL}
	}
	set := make(map[string]bool, len(list))
	for _, s := range list {
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			set[origin.Of(u)] = true
		}
	}
	return set
}

// transport is the http.RoundTripper of the clients that Config.Client
// returns. To put another RoundTripper under it (tracing, a proxy), set
// it as Config.HTTPClient's Transport.
type transport struct {
	base    http.RoundTripper
	tokens  *tokens
	origins map[string]bool
	dpop    *dpopProver // nil without Config.DPoPKey
}

// RoundTrip sends req with a bearer token and retries once on
// invalid_token, as Config.Client describes. A request for an origin that
// is not the service's goes to the base transport untouched: no token, no retry.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.origins[origin.Of(req.URL)] {
		return t.base.RoundTrip(req)
	}
	tok, err := t.tokens.current(req.Context())
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.send(req, tok, req.Body)
	if err != nil || !rejected(resp) {
		return resp, err
	}
	if !canReplay(req) {
		return resp, nil // the 401 as it is
	}
	t.tokens.drop(tok.AccessToken)
	fresh, err := t.tokens.current(req.Context())
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	if fresh.AccessToken == tok.AccessToken {
		return resp, nil // never the same token twice
	}
	body, err := bodyAgain(req)
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	resp.Body.Close()
	resp, err = t.send(req, fresh, body)
	if err != nil || !rejected(resp) {
		return resp, err
	}
	detachBody(resp)
	e := &InvalidTokenError{Code: "invalid_token", Response: resp}
	e.Description = tokenErrorDescription(resp)
	return nil, e
}

// send sends req with tok: as a bearer token, or, for a token bound to
// the client's DPoP key, as "DPoP" with a new proof (retried once with a
// nonce when the service asks for one).
func (t *transport) send(req *http.Request, tok *oauth2.Token, body io.ReadCloser) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Body = body
	if t.dpop == nil || !strings.EqualFold(tok.TokenType, "DPoP") {
		r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		return t.base.RoundTrip(r)
	}
	return t.dpop.sendWithProof(t.base, r, func(r *http.Request) error {
		p, err := t.dpop.proof(r.Method, r.URL, tok.AccessToken)
		if err != nil {
			return fmt.Errorf("client: a DPoP proof: %w", err)
		}
		r.Header.Set("Authorization", "DPoP "+tok.AccessToken)
		r.Header.Set("DPoP", p)
		return nil
	})
}

// canReplay reports whether req can be sent again: it has no body, or
// GetBody makes it anew (http.NewRequest sets it for bytes, strings and
// bytes.Buffer bodies).
func canReplay(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// bodyAgain is req's body made anew for another send: nil for none.
func bodyAgain(req *http.Request) (io.ReadCloser, error) {
	if req.GetBody == nil {
		return nil, nil
	}
	return req.GetBody()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
