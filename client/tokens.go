package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/internal/clientauth"
)

// tokens caches one token and fetches a new one at most once at a time.
type tokens struct {
	cc          clientcredentials.Config
	ctx         context.Context // values for token requests, never cancelled
	renewBefore time.Duration
	timeout     time.Duration

	signer    *clientauth.Signer                        // private_key_jwt, else nil
	audience  string                                    // the assertions' aud (Config.Issuer)
	workload  func(ctx context.Context) (string, error) // a workload's assertion, else nil
	assertTyp string                                    // its client_assertion_type
	dpop      *dpopProver                               // DPoP, else nil
	calls     http.RoundTripper                         // the calls' transport: presenting Config.Certificate, if any
	badConfig error                                     // returned by every fetch
	now       func() time.Time                          // time.Now; a test's clock

	mu       sync.Mutex
	token    *oauth2.Token
	failure  error     // the last fetch's error, returned until retryAt
	retryAt  time.Time // no new fetch before this
	inflight *fetch
}

type fetch struct {
	done  chan struct{}
	token *oauth2.Token
	err   error
}

func (c *Config) newTokens(ctx context.Context, hc *http.Client) *tokens {
	hc, certErr := c.withCertificate(hc)
	tokenURL := c.TokenURL
	if tokenURL == "" {
		tokenURL = strings.TrimSuffix(c.BaseURL, "/") + "/ids/connect/token"
	}
	t := &tokens{
		cc: clientcredentials.Config{
			ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: tokenURL,
			Scopes: c.Scopes, AuthStyle: c.authStyle(),
		},
		// A token request follows no redirect: it carries the credentials.
		ctx:         context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, clientauth.RefuseRedirects(hc)),
		renewBefore: c.RenewBefore,
		timeout:     c.FetchTimeout,
		now:         time.Now,
	}
	if t.renewBefore == 0 {
		t.renewBefore = 30 * time.Second
	}
	if t.timeout == 0 {
		t.timeout = 30 * time.Second
	}
	if t.calls = hc.Transport; t.calls == nil {
		t.calls = http.DefaultTransport
	}
	if certErr != nil {
		t.badConfig = certErr
	}
	if c.ClientSecret == "" && c.Key == nil && (c.Certificate != nil || c.GetCertificate != nil) {
		// Mutual TLS client authentication (RFC 8705 §2): client_id in
		// the body, and neither a secret nor a Basic header.
		t.cc.AuthStyle = oauth2.AuthStyleInParams
	}
	t.cc.EndpointParams = url.Values{}
	if err := clientauth.CheckParams(c.EndpointParams); err != nil {
		t.badConfig = fmt.Errorf("client: Config.EndpointParams: %w", err)
	}
	for name, vs := range c.EndpointParams {
		t.cc.EndpointParams[name] = append([]string(nil), vs...)
	}
	if len(c.Resources) > 0 {
		t.cc.EndpointParams["resource"] = append([]string(nil), c.Resources...)
	}
	if c.Key != nil {
		t.audience = c.Issuer
		switch {
		case t.audience != "":
		case c.TokenURL == "":
			t.audience = strings.TrimSuffix(c.BaseURL, "/") + "/ids"
		default:
			t.audience = tokenURL
		}
		var err error
		if t.signer, err = clientauth.NewSigner(c.Key, c.KeyAlg, c.KeyID); err != nil {
			t.badConfig = fmt.Errorf("client: Config.Key and KeyAlg: %w", err)
		}
		if c.ClientSecret != "" {
			t.badConfig = errors.New("client: set Config.ClientSecret or Config.Key, not both")
		}
		t.cc.AuthStyle = oauth2.AuthStyleInParams // the client_id beside the assertion, no Basic
	}
	if w, err := c.workloadAssertion(); err != nil {
		t.badConfig = err
	} else if w != nil {
		t.workload, t.assertTyp = w, cmp.Or(c.AssertionType, AssertionJWTBearer)
		t.cc.AuthStyle = oauth2.AuthStyleInParams // client_id beside the assertion, no Basic
	}
	if c.DPoPKey != nil {
		s, err := clientauth.NewSigner(c.DPoPKey, c.DPoPKeyAlg, "")
		if err != nil {
			t.badConfig = fmt.Errorf("client: Config.DPoPKey and DPoPKeyAlg: %w", err)
		} else {
			t.dpop = &dpopProver{signer: s, now: time.Now, nonces: map[string]string{}}
			// Token requests carry a proof too; the redirect refusal stays
			// outermost.
			if hc == nil {
				hc = http.DefaultClient
			}
			rt := hc.Transport
			if rt == nil {
				rt = http.DefaultTransport
			}
			withProofs := *hc
			withProofs.Transport = tokenTransport{base: rt, d: t.dpop}
			t.ctx = context.WithValue(t.ctx, oauth2.HTTPClient, clientauth.RefuseRedirects(&withProofs))
		}
	}
	return t
}

// request asks the token endpoint once, with a new assertion when the
// client signs them.
func (t *tokens) request(ctx context.Context) (*oauth2.Token, error) {
	if t.badConfig != nil {
		return nil, t.badConfig
	}
	typ, assertion := clientauth.AssertionType, ""
	switch {
	case t.workload != nil:
		var err error
		if assertion, err = t.workload(ctx); err != nil {
			return nil, err
		}
		typ = t.assertTyp
	case t.signer == nil:
		return t.cc.Token(ctx)
	default:
		var err error
		if assertion, err = t.signer.Assertion(t.cc.ClientID, t.audience, t.now()); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
	}
	cc := t.cc
	cc.EndpointParams = url.Values{"client_assertion_type": {typ}, "client_assertion": {assertion}}
	for name, vs := range t.cc.EndpointParams {
		cc.EndpointParams[name] = vs // resource and the extra parameters
	}
	return cc.Token(ctx)
}

// current returns the cached token while it is not about to expire, or
// the one a fetch brings, waiting for the fetch no longer than ctx allows.
// Concurrent callers share one fetch.
func (t *tokens) current(ctx context.Context) (*oauth2.Token, error) {
	t.mu.Lock()
	now := t.now()
	if tok := t.token; tok != nil && (tok.Expiry.IsZero() || now.Add(t.renewBefore).Before(tok.Expiry)) {
		t.mu.Unlock()
		return tok, nil
	}
	if t.failure != nil && now.Before(t.retryAt) {
		err := t.failure
		t.mu.Unlock()
		return nil, err
	}
	f := t.inflight
	if f == nil {
		f = &fetch{done: make(chan struct{})}
		t.inflight = f
		go t.fetch(f)
	}
	t.mu.Unlock()
	select {
	case <-f.done:
		if f.err != nil {
			return nil, f.err
		}
		return f.token, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fetch asks the token endpoint once. A failure is remembered for its
// Retry-After, or a second, so that callers do not storm the endpoint.
func (t *tokens) fetch(f *fetch) {
	ctx, cancel := context.WithTimeout(t.ctx, t.timeout)
	defer cancel()
	tok, err := t.request(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inflight = nil
	if err != nil {
		te := tokenError(err)
		t.failure, t.retryAt = te, t.now().Add(max(te.RetryAfter, time.Second))
		f.err = te
	} else {
		t.token, t.failure = tok, nil
		f.token = tok
	}
	close(f.done)
}

// drop forgets token if it is still the cached one.
func (t *tokens) drop(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != nil && t.token.AccessToken == token {
		t.token = nil
	}
}

func tokenError(err error) *TokenError {
	te := &TokenError{Err: err}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		te.Code, te.Description = re.ErrorCode, re.ErrorDescription
		if re.Response != nil {
			te.StatusCode = re.Response.StatusCode
			if s, perr := strconv.ParseInt(re.Response.Header.Get("Retry-After"), 10, 64); perr == nil && s > 0 {
				te.RetryAfter = time.Duration(min(s, int64(MaxRetryAfter/time.Second))) * time.Second
			}
		}
	}
	return te
}
