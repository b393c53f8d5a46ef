package accesstoken

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/jwks"
	"github.com/idsauth/idsauth/internal/jws"
)

// introspector is a Validator's Introspection, prepared: it asks an RFC
// 7662 endpoint (or a LocalIntrospector) about each token, with the
// API's credentials, and reuses the answers.
type introspector struct {
	from     *trustedIssuer // the issuer and audience; its version never changes
	checks   *checks        // the Validator's
	endpoint string
	clientID string
	secret   string
	noAuth   bool // Unauthenticated
	signer   *clientauth.Signer
	local    LocalIntrospector
	client   *http.Client

	active, inactive *tokenCache // nil when off
	inactiveAge      time.Duration
	flights          flights
	slots            chan struct{}
	timeout          time.Duration
	maxToken         int // for a reference token
	maxJWT           int // for a token shaped like a JWT, when every token is introspected
	logger           *slog.Logger
}

// newIntrospector prepares i for a Validator: its answers are checked
// with ch, as from's, and tokens longer than maxToken (maxJWT for one
// shaped like a JWT) are refused. Without
// Endpoint or Local it reads the endpoint from the issuer's discovery
// document, and fails if it cannot.
func newIntrospector(ctx context.Context, i *Introspection, ch *checks, from *trustedIssuer, maxToken, maxJWT int, logger *slog.Logger) (*introspector, error) {
	if err := i.check(); err != nil {
		return nil, err
	}
	in := &introspector{
		from:     from,
		checks:   ch,
		endpoint: i.Endpoint,
		clientID: i.ClientID,
		secret:   i.ClientSecret,
		noAuth:   i.Unauthenticated,
		local:    i.Local,
		timeout:  cmp.Or(i.Timeout, defaultTimeout),
		maxToken: maxToken,
		maxJWT:   maxJWT,
		logger:   logger,
	}
	in.slots = make(chan struct{}, cmp.Or(i.MaxConcurrent, 64))
	if i.CacheBytes >= 0 {
		size := cmp.Or(i.CacheBytes, 16<<20) / introspectionEntryBytes
		in.active = newTokenCache(max(1, size*3/4), cmp.Or(i.CacheMaxAge, time.Minute))
		if in.inactiveAge = cmp.Or(i.InactiveCacheMaxAge, 10*time.Second); in.inactiveAge > 0 {
			in.inactive = newTokenCache(max(1, size/4), in.inactiveAge)
		}
	}
	if in.local != nil {
		return in, nil
	}
	in.client = clientauth.RefuseRedirects(jwks.Client(i.HTTPClient, in.timeout, 0))
	if i.Key != nil {
		s, err := clientauth.NewSigner(i.Key, i.KeyAlg, i.KeyID)
		if err != nil {
			return nil, fmt.Errorf("accesstoken: Config.Introspection.Key: %w", err)
		}
		in.signer = s
	}
	if in.endpoint == "" {
		doc, err := discoverDocument(ctx, jwks.Client(i.HTTPClient, in.timeout, 0), from.issuer)
		if err != nil {
			return nil, err
		}
		if doc.IntrospectionEndpoint == "" {
			return nil, fmt.Errorf("accesstoken: discovery: %s names no introspection_endpoint", from.issuer)
		}
		if err := checkURL("the introspection_endpoint of "+from.issuer+"'s discovery document", doc.IntrospectionEndpoint); err != nil {
			return nil, err
		}
		in.endpoint = doc.IntrospectionEndpoint
	}
	return in, nil
}

// constantVersion is the key version of introspection answers, which
// no key change makes stale.
type constantVersion struct{ KeySource }

func (constantVersion) KeysVersion() uint64 { return 0 }

// inactiveClaims marks an inactive answer in the cache.
var inactiveClaims = &Claims{}

// validate introspects token, presented as p, or reuses an answer about
// it.
func (in *introspector) validate(ctx context.Context, token string, p Presentation) (*Claims, error) {
	v := in.checks
	start := v.startTimer()
	switch {
	case len(token) > in.maxToken && (len(token) > in.maxJWT || strings.Count(token, ".") != 2):
		return nil, v.failed(ctx, start, refused(errTooLarge))
	case token == "":
		return nil, v.failed(ctx, start, refused(errMalformed))
	}
	now := v.now()
	key := cacheKey(token, maxCachedReference)
	if c, hit, err := v.fromCache(ctx, in.active, key, p, now, start); hit {
		return c, err
	}
	if in.inactive != nil {
		if _, ok := in.inactive.get(key, now); ok {
			return nil, v.failed(ctx, start, refused(ErrInactive))
		}
	}
	c, err := in.flights.do(key, func() (*Claims, error) { return in.call(ctx, token, key) })
	if err == nil {
		err = v.binding(p, c)
	}
	if err != nil {
		if _, ok := err.(*ValidationError); !ok {
			err = refused(err)
		}
		return nil, v.failed(ctx, start, err)
	}
	v.succeeded(ctx, start, false)
	return c, nil
}

// call asks the endpoint about token, checks the answer, and caches it
// under key, the token's cacheKey.
func (in *introspector) call(ctx context.Context, token, key string) (*Claims, error) {
	// The callers who share this call wait for it: the first one's
	// cancellation does not end it, Timeout does.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.timeout)
	defer cancel()
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	case <-ctx.Done():
		in.log(ctx, "no call slot freed in time", ctx.Err())
		return nil, ErrIntrospectionUnavailable
	}
	answer, err := in.ask(ctx, token)
	if err != nil {
		in.log(ctx, "the call failed", err)
		return nil, ErrIntrospectionUnavailable
	}
	raw, err := jws.ReadClaims(answer)
	if err != nil {
		in.log(ctx, "the answer is not a JSON object, or names a member twice", err)
		return nil, ErrIntrospectionUnavailable
	}
	a, _ := raw.Raw("active")
	active := string(a) == "true"
	if !active && string(a) != "false" {
		in.log(ctx, `the answer has no boolean "active"`, nil)
		return nil, ErrIntrospectionUnavailable
	}
	now := in.checks.now()
	cacheable := len(answer) <= maxCachedAnswer
	key = strings.Clone(key) // the caches keep it
	if !active {
		if in.inactive != nil && cacheable {
			in.inactive.put(key, inactiveClaims, now, now.Add(in.inactiveAge), in.from.versioned, 0)
		}
		return nil, ErrInactive
	}
	if ok, unknown := describesAccessToken(raw); !ok {
		if unknown != "" {
			// Every token of a server that names its access tokens so is
			// refused: the log says which name, for an operator to tell.
			in.log(ctx, "the answer's token_type names no kind of token known here: refused as not an access token",
				fmt.Errorf("token_type %q", truncate(unknown, 64)))
		}
		return nil, errType // a refresh token, say; not cached: a retry costs a call, as an unknown token's first does
	}
	// RFC 7662 makes "iss" optional: without it, the issuer asked.
	c, err := in.checks.claims(in.from, raw, base64.RawURLEncoding.EncodeToString(answer), in.from.issuer, now)
	if err != nil {
		return nil, err
	}
	if in.active != nil && cacheable {
		in.active.put(key, c, now, c.ExpiresAt.Add(in.checks.leeway), in.from.versioned, 0)
	}
	return c, nil
}

// ask returns the endpoint's answer about token.
func (in *introspector) ask(ctx context.Context, token string) ([]byte, error) {
	if in.local != nil {
		return in.local.IntrospectToken(ctx, in.clientID, token)
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	switch {
	case in.noAuth:
		if in.clientID != "" {
			form.Set("client_id", in.clientID)
		}
	case in.signer != nil:
		// Its audience is the issuer, which IdentityServer and this
		// module's issuer accept at every endpoint.
		assertion, err := in.signer.Assertion(in.clientID, in.from.issuer, time.Now())
		if err != nil {
			return nil, err
		}
		form.Set("client_id", in.clientID)
		form.Set("client_assertion_type", clientauth.AssertionType)
		form.Set("client_assertion", assertion)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if in.signer == nil && !in.noAuth {
		req.SetBasicAuth(url.QueryEscape(in.clientID), url.QueryEscape(in.secret)) // RFC 6749 §2.3.1
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("the endpoint answered %s", resp.Status)
	case len(body) > maxAnswer:
		return nil, fmt.Errorf("the answer is longer than %d bytes", maxAnswer)
	}
	return body, nil
}

// truncate returns s cut to at most n bytes, whole runes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// log records why a call failed, without the token.
func (in *introspector) log(ctx context.Context, what string, err error) {
	if in.logger == nil {
		return
	}
	attrs := []slog.Attr{slog.String("endpoint", in.endpoint)}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	in.logger.LogAttrs(ctx, slog.LevelWarn, "idsauth: token introspection: "+what, attrs...)
}
