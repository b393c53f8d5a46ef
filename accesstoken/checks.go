package accesstoken

import (
	"context"
	"slices"
	"time"

	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/observe"
	"github.com/idsauth/idsauth/scope"
)

// checks are what a Validator asks of the claims of every token, whichever
// way they came (a JWT's payload, an introspection answer), and the events
// that report each validation: one set of checks for both kinds of token.
type checks struct {
	leeway     time.Duration
	allowBound bool
	now        func() time.Time
	observer   observe.Observer
}

func newChecks(cfg *Config) checks {
	ch := checks{leeway: leewayOf(cfg.Leeway), allowBound: cfg.AllowBoundTokens, now: cfg.Now, observer: cfg.Observer}
	if ch.now == nil {
		ch.now = time.Now
	}
	return ch
}

// leewayOf is Config.Leeway's rule: zero means 30 seconds,
// negative none.
func leewayOf(l time.Duration) time.Duration {
	switch {
	case l == 0:
		return 30 * time.Second
	case l < 0:
		return 0
	}
	return l
}

// trustedIssuer is one issuer a Validator accepts, as New
// prepared it.
type trustedIssuer struct {
	issuer    string
	audience  []string // empty with AnyAudience
	keys      KeySource
	versioned VersionedKeySource // nil when the source has no version: its tokens are not cached
}

// claims decodes and checks the claim set of a token whose signature the
// keys of from verified: its form (parseClaims), then exp, nbf, iat with
// leeway, iss and aud against from, and last the scope claim. A binding
// (cnf) is checked by binding, for each request, since the cache keeps
// the claims. The "iss"
// was checked when from was chosen by it; it is compared again so that
// this function alone says every claim is right.
func (ch *checks) claims(from *trustedIssuer, raw jws.Claims, payload64, issuer string, now time.Time) (*Claims, error) {
	c, t, err := parseClaims(raw, payload64, issuer)
	switch {
	case err != nil:
		return nil, err
	case !t.exp:
		return nil, errMissingClaim
	case !now.Before(c.ExpiresAt.Add(ch.leeway)):
		e := refused(ErrExpired)
		e.Expiry, e.Now = c.ExpiresAt, now
		return nil, e
	case t.nbf && now.Add(ch.leeway).Before(c.NotBefore):
		e := refused(errNotYetValid)
		e.NotBefore, e.Now = c.NotBefore, now
		return nil, e
	case t.iat && now.Add(ch.leeway).Before(c.IssuedAt):
		e := refused(errIssuedInFuture)
		e.IssuedAt, e.Now = c.IssuedAt, now
		return nil, e
	case c.Issuer != from.issuer:
		// Unreachable while the issuer is chosen by "iss"; kept as a
		// guard. An untrusted "iss" is never reported: it never verified.
		return nil, errIssuer
	case len(from.audience) > 0 && !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(from.audience, a) }):
		e := refused(errAudience)
		e.Audience = c.Audience
		return nil, e
	}
	// errScopeName and errScopeClaim are ParseClaim's own errors.
	if c.Scopes, err = scope.ParseClaim(t.scope); err != nil {
		return nil, err
	}
	return c, nil
}

// binding checks the binding the token's presentation p needs (see
// Presentation.check): a certificate-bound token must come with its
// certificate, a DPoP-bound one with DPoP, a token presented with DPoP
// must be bound to a DPoP key; a bound token presented without its proof
// is admitted only with AllowBoundTokens, which the handler then checks
// itself. Decide checks it again, for validators of one's own; here it
// is for a caller of Validate alone.
func (ch *checks) binding(p Presentation, c *Claims) error {
	return p.check(c, ch.allowBound)
}

// fromCache answers for token, presented as p, from cache (nil: off)
// when it holds it: its claims, or the refusal of its binding; hit is
// false when the token must be checked.
func (ch *checks) fromCache(ctx context.Context, cache *tokenCache, token string, p Presentation, now, start time.Time) (c *Claims, hit bool, err error) {
	if cache == nil {
		return nil, false, nil
	}
	if c, hit = cache.get(token, now); !hit {
		return nil, false, nil
	}
	if err := ch.binding(p, c); err != nil {
		return nil, true, ch.failed(ctx, start, refused(err))
	}
	ch.succeeded(ctx, start, true)
	return c, true, nil
}

// startTimer starts timing a validation, if there is an observer to tell.
func (ch *checks) startTimer() time.Time {
	if ch.observer == nil {
		return time.Time{}
	}
	return time.Now()
}

// succeeded reports a validation that passed, from the cache or not. It
// and failed cost a comparison without an observer: they inline, and
// leave the work to report.
func (ch *checks) succeeded(ctx context.Context, start time.Time, cached bool) {
	if ch.observer != nil {
		ch.report(ctx, start, cached, nil)
	}
}

// failed reports a validation that failed with err, and returns err.
func (ch *checks) failed(ctx context.Context, start time.Time, err error) error {
	if ch.observer != nil {
		ch.report(ctx, start, false, err)
	}
	return err
}

func (ch *checks) report(ctx context.Context, start time.Time, cached bool, err error) {
	e := observe.Event{Kind: observe.ValidationSucceeded, Cached: cached, Duration: time.Since(start)}
	if err != nil {
		e.Kind, e.Reason = observe.ValidationFailed, "other"
		if ve, ok := err.(*ValidationError); ok {
			e.Reason = ve.Code
		}
	}
	ch.observer.Observe(ctx, e)
}
