package middleware

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/observe"
)

// rejection is what the reject hook and the logger see of a rejected
// request beyond its observe.Event: the request, and the error with its
// facts. It travels in the event's context under a key of this package,
// so that no other observer can read it: an Event holds bounded values
// only, and these are not.
type rejection struct {
	r      *http.Request
	err    error // as refused, a *ValidationError with its facts
	reason error // err reduced to its Reason
}

type rejectionKey struct{}

func rejectionFrom(ctx context.Context) (*rejection, bool) {
	rj, ok := ctx.Value(rejectionKey{}).(*rejection)
	return rj, ok
}

func isRejection(k observe.Kind) bool { return k == observe.Rejected || k == observe.SCIMRefused }

// hookObserver is a RejectFunc as an observer.
type hookObserver RejectFunc

func (h hookObserver) Observe(ctx context.Context, e observe.Event) {
	if rj, ok := rejectionFrom(ctx); ok && isRejection(e.Kind) {
		h(rj.r, e.Status, rj.reason)
	}
}

// logObserver logs rejections at Info level: method, path (without the
// query), status and reason, and the facts of a *ValidationError of this
// package's.
type logObserver struct{ l *slog.Logger }

func (o logObserver) Observe(ctx context.Context, e observe.Event) {
	rj, ok := rejectionFrom(ctx)
	if !ok || !isRejection(e.Kind) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", rj.r.Method),
		slog.String("path", rj.r.URL.Path),
		slog.Int("status", e.Status),
		slog.String("reason", logReason(rj.reason)),
	}
	if ve, isVE := rj.err.(*ValidationError); isVE && reasonRow(rj.reason) >= 0 {
		if detail := ve.Error(); detail != rj.reason.Error() {
			attrs = append(attrs, slog.String("detail", detail))
		}
	}
	o.l.LogAttrs(ctx, slog.LevelInfo, "idsauth: request rejected", attrs...)
}

// registered returns tenant if it is registered in tenants, else "": an
// event names registered tenants only. It asks the store only when there
// is an observer to tell.
func (o *responder) registered(tenants TenantStore, tenant string) string {
	if o.obs == nil || len(tenants.TenantTokens(tenant)) == 0 {
		return ""
	}
	return tenant
}

// scimLimit names the SCIM failure budget that refused a request.
func scimLimit(l limit.Limit) observe.Limit {
	switch l {
	case limit.Address:
		return observe.LimitAddress
	case limit.SubjectAddress:
		return observe.LimitTenant
	}
	return ""
}

// startTimer starts timing a validation, if there is an observer to tell.
func (v *Validator) startTimer() time.Time {
	if v.observer == nil {
		return time.Time{}
	}
	return time.Now()
}

// succeeded reports a validation that passed, from the cache or not. It
// and failed cost a comparison without an observer: they inline, and
// leave the work to report.
func (v *Validator) succeeded(ctx context.Context, start time.Time, cached bool) {
	if v.observer != nil {
		v.report(ctx, start, cached, nil)
	}
}

// failed reports a validation that failed with err, and returns err.
func (v *Validator) failed(ctx context.Context, start time.Time, err error) error {
	if v.observer != nil {
		v.report(ctx, start, false, err)
	}
	return err
}

func (v *Validator) report(ctx context.Context, start time.Time, cached bool, err error) {
	e := observe.Event{Kind: observe.ValidationSucceeded, Cached: cached, Duration: time.Since(start)}
	if err != nil {
		e.Kind, e.Reason = observe.ValidationFailed, ReasonCode(err)
	}
	v.observer.Observe(ctx, e)
}

// send gives e to o, if there is one.
func send(ctx context.Context, o observe.Observer, e observe.Event) {
	if o != nil {
		o.Observe(ctx, e)
	}
}

// fetchFailure classifies a failed JWKS fetch for a KeysFetchFailed
// event: its error holds a URL and a server's words, an event neither.
func fetchFailure(err error) string {
	var ue *url.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ue) && ue.Timeout():
		return observe.FetchFailureTimeout
	case ue != nil:
		return observe.FetchFailureTransport
	case errors.Is(err, jwkset.ErrInvalidHTTPStatusCode):
		return observe.FetchFailureStatus
	}
	return observe.FetchFailureInvalid
}
