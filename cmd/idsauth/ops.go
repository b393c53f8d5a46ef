package main

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/promtext"
	"github.com/idsauth/idsauth/issuer"
)

// instrumentIssuer counts the requests in flight and the JWKS documents
// served.
func (s *server) instrumentIssuer(h http.Handler) http.Handler {
	jwks := strings.TrimSuffix(mustPath(s.iss.JWKSURL()), "/")
	return s.instrument(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == jwks && r.Method == http.MethodGet {
			s.jwksServed.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
}

func mustPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Path
}

// issuerReadiness says why the service should not get traffic, or "":
// no key is published, or a store it cannot do without does not answer;
// and what it serves without (a registry's snapshot, a token store's
// master), which leaves it ready: every replica shares those stores, and
// taking them all out of rotation would turn a part lost into the whole.
func (s *server) issuerReadiness(ctx context.Context) (notReady string, degraded []string) {
	if len(s.iss.KeyIDs()) == 0 {
		return "no signing key published", nil
	}
	if s.store != nil {
		if err := s.store.ping(ctx); err != nil {
			return "the limiter store (Redis) does not answer", nil
		}
	}
	var parts [2]struct{ notReady, degraded string }
	if s.registry != nil {
		parts[0].notReady, parts[0].degraded = registryReadiness(s.registry)
	}
	if s.tokens != nil {
		parts[1].notReady, parts[1].degraded = tokenStoreReadiness(s.tokens.Masters(ctx))
	}
	for _, p := range parts {
		if p.notReady != "" {
			return p.notReady, nil
		}
		if p.degraded != "" {
			degraded = append(degraded, p.degraded)
		}
	}
	return "", degraded
}

// writeIssuerMetrics writes the identity service's own metrics: the JWKS
// served, the keys, the registry and the token store.
func (s *server) writeIssuerMetrics(pw *promtext.Writer, r *http.Request) {
	now := time.Now()
	pw.Header("idsauth_jwks_served_total", "JWKS documents requested from the identity service.", "counter")
	pw.Sample("idsauth_jwks_served_total", nil, nil, strconv.FormatUint(s.jwksServed.Load(), 10))
	keys := s.iss.KeySchedule()
	pw.Header("idsauth_signing_key_info", "The key that signs now, by kid and alg (value 1).", "gauge")
	if kids := s.iss.KeyIDs(); len(kids) > 0 {
		for _, k := range keys {
			if k.KID == kids[0] {
				pw.Sample("idsauth_signing_key_info", []string{"kid", "alg"}, []string{k.KID, k.Alg}, "1")
				break
			}
		}
	}
	next := nextChange(keys, now)
	pw.Header("idsauth_key_schedule_next_change_timestamp_seconds", "When the key schedule next publishes, switches or retires a key, in Unix seconds; 0 none scheduled.", "gauge")
	var nextUnix int64
	if !next.IsZero() {
		nextUnix = next.Unix()
	}
	pw.Sample("idsauth_key_schedule_next_change_timestamp_seconds", nil, nil, strconv.FormatInt(nextUnix, 10))
	if s.registry != nil {
		writeRegistryMetrics(pw, s.registry)
	}
	if s.tokens != nil {
		masters, _ := s.tokens.Masters(r.Context()) // none when unknown
		writeTokenStoreMetrics(pw, masters)
	}
}

// nextChange returns the next instant after now at which the key
// schedule publishes, switches or retires a key; zero when none.
func nextChange(keys []issuer.ScheduledKey, now time.Time) time.Time {
	var next time.Time
	for _, k := range keys {
		for _, t := range []time.Time{k.PublishedFrom, k.PublishedUntil, k.SignsFrom, k.SignsUntil} {
			if t.After(now) && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}
