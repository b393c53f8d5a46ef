// Package metrics counts idsauth's events (package observe) and serves
// them in the Prometheus text exposition format, with no dependency
// beyond the standard library:
//
//	m := metrics.New()
//	v, err := accesstoken.New(ctx, accesstoken.Config{..., Observer: m})
//	iss, err := issuer.New(cfg, issuer.WithObserver(m))
//	opsMux.Handle("GET /metrics", m)
//
// Every label value comes from an observe.Event, whose fields are bounded
// or registered names (a reason code, a status, a registered client ID or
// tenant, a granted scope): never a token, a secret or a name an attacker
// chose, so the number of series is bounded by the configuration.
// Metric names follow the Prometheus conventions (idsauth_..._total for
// counters, seconds for durations).
package metrics

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idsauth/idsauth/internal/promtext"
	"github.com/idsauth/idsauth/observe"
)

// durationBuckets are the upper bounds, in seconds, of the duration
// histograms: from a cached validation (about a microsecond) to a bcrypt
// check under load.
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// family is one metric: its name, help, type and label names, and its
// series by label values.
type family struct {
	name, help, typ string
	labels          []string

	mu     sync.RWMutex
	series map[string]*series // by the label values, joined by "\xff"
}

type series struct {
	values []string
	count  atomic.Uint64 // a counter's or gauge's value, or a histogram's count
	// a histogram's
	sumNanos atomic.Int64
	buckets  []atomic.Uint64 // cumulative counts are made when written
}

func (f *family) get(values ...string) *series {
	key := strings.Join(values, "\xff")
	f.mu.RLock()
	s := f.series[key]
	f.mu.RUnlock()
	if s != nil {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s = f.series[key]; s == nil {
		s = &series{values: slices.Clone(values)}
		if f.typ == "histogram" {
			s.buckets = make([]atomic.Uint64, len(durationBuckets))
		}
		f.series[key] = s
	}
	return s
}

// Metrics is an observe.Observer that counts events, and an http.Handler
// that serves the counts. The zero value is not usable: call New.
type Metrics struct {
	families []*family

	validations, validationSeconds, rejections *family
	keysFetches, keys                          *family
	tokensIssued, tokensRefused, tokenSeconds  *family
	limiterRefusals, scim                      *family
}

// New returns Metrics with every family registered and no series yet.
func New() *Metrics {
	m := &Metrics{}
	add := func(name, help, typ string, labels ...string) *family {
		f := &family{name: name, help: help, typ: typ, labels: labels, series: map[string]*series{}}
		m.families = append(m.families, f)
		return f
	}
	m.validations = add("idsauth_validations_total", "Access tokens checked by a validator, by result (succeeded, failed), whether the cache of verified tokens answered, and the reason of a failure.", "counter", "result", "cached", "reason")
	m.validationSeconds = add("idsauth_validation_duration_seconds", "Time taken to check an access token, by result.", "histogram", "result")
	m.rejections = add("idsauth_rejections_total", "Requests that RequireBearer or RequireScope refused, by reason and HTTP status.", "counter", "reason", "status")
	m.keysFetches = add("idsauth_jwks_fetches_total", "JWKS fetches by a validator, by result (ok, failed) and the reason of a failure.", "counter", "result", "reason")
	m.keys = add("idsauth_jwks_keys", "Keys that the last JWKS a validator fetched holds.", "gauge")
	m.tokensIssued = add("idsauth_tokens_issued_total", "Access tokens issued by the token endpoint, by client and granted scopes.", "counter", "client_id", "scope")
	m.tokensRefused = add("idsauth_tokens_refused_total", "Token requests refused, by client (empty when unregistered), OAuth error code and HTTP status.", "counter", "client_id", "reason", "status")
	m.tokenSeconds = add("idsauth_token_request_duration_seconds", "Time taken to answer a token request, by outcome (issued, refused).", "histogram", "outcome")
	m.limiterRefusals = add("idsauth_limiter_refusals_total", "Requests refused by a failure budget (429), by endpoint (token, scim) and budget (address, client, tenant).", "counter", "endpoint", "limit")
	m.scim = add("idsauth_scim_authentications_total", "SCIM authentications, by result (admitted, refused), tenant (empty when unregistered) and the reason of a refusal.", "counter", "result", "tenant", "reason")
	return m
}

// Observe counts e. It takes no lock but to add a series not seen before.
func (m *Metrics) Observe(_ context.Context, e observe.Event) {
	switch e.Kind {
	case observe.ValidationSucceeded:
		m.validations.get("succeeded", strconv.FormatBool(e.Cached), "").count.Add(1)
		m.validationSeconds.get("succeeded").observe(e)
	case observe.ValidationFailed:
		m.validations.get("failed", "false", e.Reason).count.Add(1)
		m.validationSeconds.get("failed").observe(e)
	case observe.Rejected:
		m.rejections.get(e.Reason, strconv.Itoa(e.Status)).count.Add(1)
	case observe.KeysFetched:
		m.keysFetches.get("ok", "").count.Add(1)
		m.keys.get().count.Store(uint64(max(e.Keys, 0)))
	case observe.KeysFetchFailed:
		m.keysFetches.get("failed", e.Reason).count.Add(1)
	case observe.TokenIssued:
		m.tokensIssued.get(e.ClientID, strings.Join(e.Scopes, " ")).count.Add(1)
		m.tokenSeconds.get("issued").observe(e)
	case observe.TokenRefused:
		m.tokensRefused.get(e.ClientID, e.Reason, strconv.Itoa(e.Status)).count.Add(1)
		m.tokenSeconds.get("refused").observe(e)
		if e.Limit != "" {
			m.limiterRefusals.get("token", string(e.Limit)).count.Add(1)
		}
	case observe.SCIMAuthenticated:
		m.scim.get("admitted", e.Tenant, "").count.Add(1)
	case observe.SCIMRefused:
		m.scim.get("refused", e.Tenant, e.Reason).count.Add(1)
		if e.Limit != "" {
			m.limiterRefusals.get("scim", string(e.Limit)).count.Add(1)
		}
	}
}

func (s *series) observe(e observe.Event) {
	sec := e.Duration.Seconds()
	for i, le := range durationBuckets {
		if sec <= le {
			s.buckets[i].Add(1)
			break
		}
	}
	s.sumNanos.Add(int64(e.Duration))
	s.count.Add(1)
}

// ServeHTTP writes the metrics in the Prometheus text format (version
// 0.0.4).
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", promtext.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	m.WriteTo(w) //nolint:errcheck // the client went away
}

// WriteTo writes the metrics in the Prometheus text format, families in a
// fixed order and series sorted, to w.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	pw := promtext.NewWriter(w)
	for _, f := range m.families {
		f.write(pw)
	}
	return pw.Flush()
}

func (f *family) write(pw *promtext.Writer) {
	f.mu.RLock()
	all := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		all = append(all, s)
	}
	f.mu.RUnlock()
	if len(all) == 0 {
		return // a family with no series is written when it has one
	}
	slices.SortFunc(all, func(a, b *series) int { return slices.Compare(a.values, b.values) })
	pw.Header(f.name, f.help, f.typ)
	for _, s := range all {
		if f.typ != "histogram" {
			pw.Sample(f.name, f.labels, s.values, strconv.FormatUint(s.count.Load(), 10))
			continue
		}
		labels := append(slices.Clone(f.labels), "le")
		var cum uint64
		for i, le := range durationBuckets {
			cum += s.buckets[i].Load()
			pw.Sample(f.name+"_bucket", labels, append(slices.Clone(s.values), promtext.Float(le)), strconv.FormatUint(cum, 10))
		}
		// The count is read after the buckets and may lag them by the
		// observations in flight; the larger keeps +Inf the largest bucket.
		count := max(s.count.Load(), cum)
		pw.Sample(f.name+"_bucket", labels, append(slices.Clone(s.values), "+Inf"), strconv.FormatUint(count, 10))
		pw.Sample(f.name+"_sum", f.labels, s.values, promtext.Float(float64(s.sumNanos.Load())/1e9))
		pw.Sample(f.name+"_count", f.labels, s.values, strconv.FormatUint(count, 10))
	}
}
