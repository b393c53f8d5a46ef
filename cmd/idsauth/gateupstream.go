package main

import (
	"cmp"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/assertion"
	"github.com/idsauth/idsauth/internal/bearer"
)

// upstreamHeaders are the headers of the gate's 200 answer, which the
// proxy copies onto the request it sends upstream: a header per claim of
// the configuration, and the assertion. Every one of them is in every
// 200 answer, empty when the token has no such claim, so that a proxy
// that copies them all replaces whatever the client sent under those
// names.
type upstreamHeaders struct {
	names   []string // canonical, in the order of values
	claims  []string // the claim of each name; "" for the assertion's
	signer  *assertion.Signer
	warned  sync.Map // claim names already logged as unfit for a header
	maxAge  time.Duration
	noCache bool
}

// newUpstreamHeaders makes the 200 answer's headers of cfg, and the
// JSON Web Key Set of the assertion's key (nil without an assertion).
func newUpstreamHeaders(cfg *gateConfig) (*upstreamHeaders, []byte, error) {
	u := &upstreamHeaders{maxAge: 5 * time.Minute, noCache: cfg.CacheSeconds < 0}
	if cfg.CacheSeconds > 0 {
		u.maxAge = time.Duration(cfg.CacheSeconds) * time.Second
	}
	claims := make([]string, 0, len(cfg.Claims))
	for c := range cfg.Claims {
		claims = append(claims, c)
	}
	slices.Sort(claims)
	for _, c := range claims {
		u.names = append(u.names, http.CanonicalHeaderKey(cfg.Claims[c]))
		u.claims = append(u.claims, c)
	}
	var jwks []byte
	if cfg.Assertion != nil {
		s, err := loadAssertionKey(cfg)
		if err != nil {
			return nil, nil, err
		}
		if jwks, err = assertion.JWKS(s); err != nil {
			return nil, nil, err
		}
		u.signer = s
		u.names = append(u.names, http.CanonicalHeaderKey(cmp.Or(cfg.Assertion.Header, "X-Idsauth-Assertion")))
		u.claims = append(u.claims, "")
		// An upstream gets an assertion with half its life left at least.
		u.maxAge = min(u.maxAge, s.Lifetime()/2)
	}
	for i, n := range u.names {
		if slices.Contains(u.names[:i], n) {
			return nil, nil, &gateConfigError{"claims: the header " + n + " is named twice"}
		}
	}
	return u, jwks, nil
}

// gateConfigError is a configuration the gate cannot compile.
type gateConfigError struct{ msg string }

func (e *gateConfigError) Error() string { return e.msg }

// handler is the end of a route's chain, reached by a request the
// middleware admitted: it answers 200 with the upstream headers of its
// claims, reused for the same token on the same route while the
// decision cache keeps them.
func (u *upstreamHeaders) handler(route string, cache *decisionCache, obs *gateObserve) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := accesstoken.ClaimsFrom(r.Context())
		tok, _, _ := bearer.Parse(r, true) // admitted: it reads
		now := time.Now()
		values, ok := cache.get(route, tok, now)
		if !ok {
			values = u.values(c, route, now, obs.logger)
			if !u.noCache {
				expires := now.Add(u.maxAge)
				if c.ExpiresAt.Before(expires) {
					expires = c.ExpiresAt
				}
				cache.put(route, tok, values, expires, now)
			}
		}
		h := w.Header()
		for i, name := range u.names {
			h[name] = values[i : i+1 : i+1]
		}
		w.WriteHeader(http.StatusOK)
	})
}

// values are the headers' values for c on route.
func (u *upstreamHeaders) values(c *accesstoken.Claims, route string, now time.Time, logger *slog.Logger) []string {
	out := make([]string, len(u.names))
	var raw map[string]any
	for i, claim := range u.claims {
		if claim == "" {
			a, err := u.signer.Sign(route, assertion.Claims{Subject: c.Subject, ClientID: c.ClientID, Scope: c.Scopes.String(), TokenIss: c.Issuer}, now)
			if err != nil {
				logger.Error("the gate's assertion could not be signed: the request goes without it", slog.String("error", err.Error()))
			}
			out[i] = a
			continue
		}
		v := ""
		switch claim {
		case "iss":
			v = c.Issuer
		case "sub":
			v = c.Subject
		case "client_id":
			v = c.ClientID
		case "scope":
			v = c.Scopes.String()
		case "aud":
			v = strings.Join(c.Audience, " ")
		case "jti":
			v = c.ID
		case "exp":
			v = strconv.FormatInt(c.ExpiresAt.Unix(), 10)
		default:
			if raw == nil {
				raw, _ = c.Raw()
			}
			v = claimText(raw[claim])
		}
		if !headerSafe(v) {
			if _, seen := u.warned.LoadOrStore(claim, true); !seen {
				logger.Warn("a claim's value is unfit for a header (a control or non-ASCII character, or over 1 KiB): its header goes empty; the assertion carries it",
					slog.String("claim", claim))
			}
			v = ""
		}
		out[i] = v
	}
	return out
}

// claimText is a claim's value as a header holds it: a string as it is,
// an array of strings space-separated, anything else as JSON.
func claimText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []any:
		parts := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				b, _ := json.Marshal(v)
				return string(b)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, " ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// headerSafe reports whether v can go in a header as it is: printable
// ASCII, no leading or trailing space, 1 KiB at most. Nothing a proxy
// could read as the end of a header or of the answer.
func headerSafe(v string) bool {
	if len(v) > 1<<10 || strings.TrimSpace(v) != v {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}
