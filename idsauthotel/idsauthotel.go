// Package idsauthotel records idsauth's events (package observe) as
// OpenTelemetry metrics and spans. It is a module of its own, so that
// idsauth's go.mod holds no telemetry dependency: only a service that
// imports this package takes OpenTelemetry in.
//
//	obs, err := idsauthotel.New(idsauthotel.Config{})
//	v, err := accesstoken.New(ctx, accesstoken.Config{..., Observer: obs})
//	bearer := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{Observer: obs})
//	iss, err := issuer.New(cfg, issuer.WithObserver(obs))
//
// Metrics (counters unless said otherwise):
//
//	idsauth.validations             idsauth.result, idsauth.cache.hit, error.type
//	idsauth.rejections              idsauth.guard ("bearer", "scim"), idsauth.reason, http.response.status_code
//	idsauth.tokens.issued           oauth2.client_id, oauth2.scope
//	idsauth.tokens.refused          error.type (the OAuth error code), http.response.status_code, oauth2.client_id, idsauth.limit
//	idsauth.token.duration          histogram, seconds: idsauth.result, error.type
//	idsauth.jwks.fetches            idsauth.result, error.type
//	idsauth.jwks.keys               gauge: the keys of the last JWKS fetched
//	idsauth.scim.authentications    idsauth.result, idsauth.scim.tenant, error.type, idsauth.limit
//
// Spans: "idsauth.validate" around each validation and "idsauth.token"
// around each token request, children of the span in the request's
// context (an otelhttp server span, say), with an Error status and
// error.type on failure. An event is sent when its work ends and says how
// long it took, so each span is recorded then, with its start and end
// times: it has no children of its own.
//
// Every attribute value comes from an observe.Event, whose fields are
// bounded or registered names: no span or metric carries a token, a
// secret, an unregistered client ID or an error_description.
package idsauthotel

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/idsauth/idsauth/observe"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/idsauth/idsauth/idsauthotel"

// The attribute keys of this package's own, beside OpenTelemetry's
// semantic conventions (error.type, http.response.status_code).
const (
	AttrResult   = attribute.Key("idsauth.result")      // "success" or "failure"
	AttrCacheHit = attribute.Key("idsauth.cache.hit")   // a validation answered from the cache
	AttrGuard    = attribute.Key("idsauth.guard")       // "bearer" or "scim"
	AttrReason   = attribute.Key("idsauth.reason")      // observe.Event.Reason of a rejection
	AttrLimit    = attribute.Key("idsauth.limit")       // the failure budget that refused a 429
	AttrTenant   = attribute.Key("idsauth.scim.tenant") // a registered SCIM tenant
	AttrClientID = attribute.Key("oauth2.client_id")    // a registered client
	AttrScope    = attribute.Key("oauth2.scope")        // granted scopes, space-separated
	attrError    = attribute.Key("error.type")
	attrStatus   = attribute.Key("http.response.status_code")
)

// Config holds the providers. The zero value uses the global ones.
type Config struct {
	// MeterProvider makes the meter. Nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider makes the tracer. Nil means
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// Observer is an observe.Observer that records metrics and spans. It is
// safe for concurrent use; give the same one to the Validator, the
// middleware and the issuer.
type Observer struct {
	tracer        trace.Tracer
	validations   metric.Int64Counter
	rejections    metric.Int64Counter
	issued        metric.Int64Counter
	refused       metric.Int64Counter
	tokenDuration metric.Float64Histogram
	fetches       metric.Int64Counter
	keys          metric.Int64Gauge
	scim          metric.Int64Counter
}

// New returns an Observer recording with cfg's providers. It fails only
// if an instrument cannot be made.
func New(cfg Config) (*Observer, error) {
	mp, tp := cfg.MeterProvider, cfg.TracerProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	m := mp.Meter(ScopeName)
	o := &Observer{tracer: tp.Tracer(ScopeName)}
	var errs [8]error
	o.validations, errs[0] = m.Int64Counter("idsauth.validations", metric.WithUnit("{validation}"),
		metric.WithDescription("Access tokens validated, by result and whether the cache answered."))
	o.rejections, errs[1] = m.Int64Counter("idsauth.rejections", metric.WithUnit("{request}"),
		metric.WithDescription("Requests refused by RequireBearer, RequireScope or SCIMAuth, by reason."))
	o.issued, errs[2] = m.Int64Counter("idsauth.tokens.issued", metric.WithUnit("{token}"),
		metric.WithDescription("Access tokens issued, by client and scopes."))
	o.refused, errs[3] = m.Int64Counter("idsauth.tokens.refused", metric.WithUnit("{request}"),
		metric.WithDescription("Token requests refused, by OAuth error code, client and limit."))
	o.tokenDuration, errs[4] = m.Float64Histogram("idsauth.token.duration", metric.WithUnit("s"),
		metric.WithDescription("Time to answer a token request."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
	o.fetches, errs[5] = m.Int64Counter("idsauth.jwks.fetches", metric.WithUnit("{fetch}"),
		metric.WithDescription("JWKS fetches, by result."))
	o.keys, errs[6] = m.Int64Gauge("idsauth.jwks.keys", metric.WithUnit("{key}"),
		metric.WithDescription("Keys in the JWKS last fetched."))
	o.scim, errs[7] = m.Int64Counter("idsauth.scim.authentications", metric.WithUnit("{request}"),
		metric.WithDescription("SCIM authentications, by result and tenant."))
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

var (
	success = AttrResult.String("success")
	failure = AttrResult.String("failure")
)

// Observe records e.
func (o *Observer) Observe(ctx context.Context, e observe.Event) {
	switch e.Kind {
	case observe.ValidationSucceeded:
		o.validations.Add(ctx, 1, metric.WithAttributes(success, AttrCacheHit.Bool(e.Cached)))
		o.span(ctx, "idsauth.validate", e, AttrCacheHit.Bool(e.Cached))
	case observe.ValidationFailed:
		o.validations.Add(ctx, 1, metric.WithAttributes(failure, AttrCacheHit.Bool(false), attrError.String(e.Reason)))
		o.span(ctx, "idsauth.validate", e, AttrCacheHit.Bool(false), attrError.String(e.Reason))
	case observe.Rejected, observe.SCIMRefused:
		guard := "bearer"
		if e.Kind == observe.SCIMRefused {
			guard = "scim"
			o.scim.Add(ctx, 1, metric.WithAttributes(withOptional([]attribute.KeyValue{failure, attrError.String(e.Reason)}, e)...))
		}
		o.rejections.Add(ctx, 1, metric.WithAttributes(AttrGuard.String(guard), AttrReason.String(e.Reason), attrStatus.Int(e.Status)))
	case observe.SCIMAuthenticated:
		o.scim.Add(ctx, 1, metric.WithAttributes(withOptional([]attribute.KeyValue{success}, e)...))
	case observe.KeysFetched:
		o.fetches.Add(ctx, 1, metric.WithAttributes(success))
		o.keys.Record(ctx, int64(e.Keys))
	case observe.KeysFetchFailed:
		o.fetches.Add(ctx, 1, metric.WithAttributes(failure, attrError.String(e.Reason)))
	case observe.TokenIssued:
		attrs := []attribute.KeyValue{AttrClientID.String(e.ClientID), AttrScope.String(strings.Join(e.Scopes, " "))}
		o.issued.Add(ctx, 1, metric.WithAttributes(attrs...))
		o.tokenDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(success))
		o.span(ctx, "idsauth.token", e, attrs...)
	case observe.TokenRefused:
		attrs := withOptional([]attribute.KeyValue{attrError.String(e.Reason), attrStatus.Int(e.Status)}, e)
		o.refused.Add(ctx, 1, metric.WithAttributes(attrs...))
		o.tokenDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(failure, attrError.String(e.Reason)))
		o.span(ctx, "idsauth.token", e, attrs...)
	}
}

// withOptional appends the client, tenant and limit of e that are set.
func withOptional(attrs []attribute.KeyValue, e observe.Event) []attribute.KeyValue {
	if e.ClientID != "" {
		attrs = append(attrs, AttrClientID.String(e.ClientID))
	}
	if e.Tenant != "" {
		attrs = append(attrs, AttrTenant.String(e.Tenant))
	}
	if e.Limit != "" {
		attrs = append(attrs, AttrLimit.String(string(e.Limit)))
	}
	return attrs
}

// span records a span for the work e reports, which ended now and took
// e.Duration. A failure's status description is its fixed reason code.
func (o *Observer) span(ctx context.Context, name string, e observe.Event, attrs ...attribute.KeyValue) {
	end := time.Now()
	_, sp := o.tracer.Start(ctx, name,
		trace.WithTimestamp(end.Add(-e.Duration)),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
	if e.Kind == observe.ValidationFailed || e.Kind == observe.TokenRefused {
		sp.SetStatus(codes.Error, e.Reason)
	}
	sp.End(trace.WithTimestamp(end))
}
