package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/promtext"
	"github.com/idsauth/idsauth/issuer"
)

// instrument counts the requests in flight and the JWKS documents
// served.
func (s *server) instrument(h http.Handler) http.Handler {
	jwks := strings.TrimSuffix(mustPath(s.iss.JWKSURL()), "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		if r.URL.Path == jwks && r.Method == http.MethodGet {
			s.jwksServed.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

func mustPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Path
}

func (s *server) opsRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		notReady, degraded := s.readiness(r.Context())
		switch {
		case notReady != "":
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:", notReady)
		case len(degraded) > 0:
			fmt.Fprintln(w, "ready, degraded:", strings.Join(degraded, "; "))
		default:
			fmt.Fprintln(w, "ready")
		}
	})
	mux.HandleFunc("GET /metrics", s.writeMetrics)
	return mux
}

// readiness says why the service should not get traffic, or "": it is
// not serving, no key is published, or a store it cannot do without does
// not answer; and what it serves without (a registry's snapshot, a token
// store's master), which leaves it ready: every replica shares those
// stores, and taking them all out of rotation would turn a part lost
// into the whole.
func (s *server) readiness(ctx context.Context) (notReady string, degraded []string) {
	if !s.ready.Load() {
		return "not serving", nil
	}
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

func (s *server) writeMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", promtext.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	if _, err := s.metrics.WriteTo(w); err != nil {
		return
	}
	pw := promtext.NewWriter(w)
	now := time.Now()
	pw.Header("idsauth_reloads_total", "Configuration reloads, by result (ok, failed).", "counter")
	pw.Sample("idsauth_reloads_total", []string{"result"}, []string{"ok"}, strconv.FormatUint(s.reloadsOK.Load(), 10))
	pw.Sample("idsauth_reloads_total", []string{"result"}, []string{"failed"}, strconv.FormatUint(s.reloadsFailed.Load(), 10))
	pw.Header("idsauth_last_reload_timestamp_seconds", "When the last reload of each result happened, in Unix seconds; 0 never.", "gauge")
	pw.Sample("idsauth_last_reload_timestamp_seconds", []string{"result"}, []string{"ok"}, strconv.FormatInt(s.lastOK.Load(), 10))
	pw.Sample("idsauth_last_reload_timestamp_seconds", []string{"result"}, []string{"failed"}, strconv.FormatInt(s.lastFailed.Load(), 10))
	pw.Header("idsauth_http_requests_in_flight", "Requests to the identity service being handled now.", "gauge")
	pw.Sample("idsauth_http_requests_in_flight", nil, nil, strconv.FormatInt(s.inFlight.Load(), 10))
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
	pw.Header("idsauth_build_info", "The idsauth command's build (value 1).", "gauge")
	pw.Sample("idsauth_build_info", []string{"version", "revision", "goversion"}, []string{s.version, s.revision, s.goVers}, "1")
	pw.Flush() //nolint:errcheck // the client went away
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
