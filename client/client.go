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

	// Key, instead of ClientSecret, signs a new private_key_jwt assertion
	// (RFC 7523 §2.2) for every token request: any crypto.Signer of ECDSA
	// P-256, RSA or Ed25519 (docs/CLIENT.md). Nil means ClientSecret.
	Key crypto.Signer
	// KeyID is the "kid" of the assertions' header. Empty means the RFC
	// 7638 thumbprint of Key's public key.
	KeyID string
	// KeyAlg is the assertions' algorithm: "ES256", "RS256", "PS256" or
	// "EdDSA". Empty means the one that fits Key (RS256 for RSA).
	KeyAlg string

	// AssertionFile, instead of ClientSecret or Key, is a file that
	// something else keeps fresh with a workload's token, read at each
	// token request and sent as client_assertion. Empty means none.
	AssertionFile string
	// AssertionFunc, instead of AssertionFile, gives the token for each
	// token request (from a SPIFFE Workload API, say). Nil means none.
	AssertionFunc func(ctx context.Context) (string, error)
	// AssertionType is the client_assertion_type of AssertionFile's or
	// AssertionFunc's token: AssertionJWTBearer (the default) or
	// AssertionJWTSPIFFE, for a JWT-SVID.
	AssertionType string

	// Resources, when set, are sent as resource parameters (RFC 8707): the
	// token is for exactly those audiences, each one the client is allowed.
	// Empty means every audience the client has.
	Resources []string

	// BaseURL is the service's root URL ("https://docs.example.com"): the
	// token URL is BaseURL + "/ids/connect/token" unless TokenURL, and its
	// origin the one that receives the token unless Origins.
	BaseURL string
	// TokenURL is the token endpoint. Empty means BaseURL +
	// "/ids/connect/token".
	TokenURL string
	// Issuer is the issuer identifier, the "aud" of the client assertions
	// (Key). Empty means BaseURL + "/ids" when TokenURL is empty, else the
	// token URL (docs/CLIENT.md says why).
	Issuer string

	// Origins, when set, are the only origins ("scheme://host[:port]") that
	// receive the token; other requests, redirects included, go without
	// it. Empty means BaseURL's origin alone; with neither, none.
	Origins []string

	// Scopes to ask for, e.g. scope.AdminWebAPI.
	Scopes []string

	// EndpointParams are extra parameters of every token request (ORY
	// Hydra's "audience", say); one the request sets itself makes every
	// token request fail, naming it. Nil means none.
	EndpointParams url.Values

	// AuthStyle is how a secret is sent: oauth2.AuthStyleInHeader (HTTP
	// Basic) or AuthStyleInParams (the form); zero means HTTP Basic, never
	// auto-detection (docs/CLIENT.md). Ignored with Key.
	AuthStyle oauth2.AuthStyle

	// HTTPClient makes both the token requests and the calls. Nil means
	// http.DefaultClient.
	HTTPClient *http.Client

	// RenewBefore is how long before its expiry a token is renewed. Zero
	// means 30 seconds.
	RenewBefore time.Duration

	// FetchTimeout bounds one token request. Zero means 30 seconds.
	FetchTimeout time.Duration

	// DPoPKey, when set, makes the tokens sender-constrained (DPoP, RFC
	// 9449): every token request and call carries a new proof by it, any
	// crypto.Signer (docs/CLIENT.md). Nil means bearer tokens.
	DPoPKey crypto.Signer
	// DPoPKeyAlg is the proofs' algorithm: "ES256", "RS256", "PS256" or
	// "EdDSA". Empty means the one that fits DPoPKey (RS256 for RSA).
	DPoPKeyAlg string

	// Certificate, when set, is presented in mutual TLS (RFC 8705) on token
	// requests and calls, and authenticates the client without a secret or
	// Key (docs/CLIENT.md). Nil means none, unless GetCertificate.
	Certificate *tls.Certificate
	// GetCertificate, instead of Certificate, gives the certificate at each
	// TLS handshake, for one renewed while the client runs (an open
	// connection keeps its own). Nil means Certificate.
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
