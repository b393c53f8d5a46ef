package middleware

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/observe"
)

// rejection is what the reject hook and the logger see of a rejected
// request beyond its observe.Event: the request, and the error with its
// facts. It travels in the event's context under a key of this package,
// so that no other observer can read it: an Event holds bounded values
// only, and these are not.
type rejection struct {
	r   *http.Request
	err error // as refused: a *accesstoken.ValidationError holds its facts
}

type rejectionKey struct{}

func rejectionFrom(ctx context.Context) (*rejection, bool) {
	rj, ok := ctx.Value(rejectionKey{}).(*rejection)
	return rj, ok
}

func isRejection(k observe.Kind) bool { return k == observe.Rejected || k == observe.SCIMRefused }

// RejectFunc is called on every rejected request with the answer's status
// and the reason: a *accesstoken.ValidationError, with its facts, for a
// token that failed validation, one of this package's own reasons, or,
// from a TokenValidator of your own, its error. accesstoken.ReasonCode
// names each with a fixed code. It never receives the token. Use it for audit logs;
// for metrics, an observe.Observer (BearerConfig.Observer) gets every
// rejection with its code.
type RejectFunc func(r *http.Request, status int, err error)

// hookObserver is a RejectFunc as an observer.
type hookObserver RejectFunc

func (h hookObserver) Observe(ctx context.Context, e observe.Event) {
	if rj, ok := rejectionFrom(ctx); ok && isRejection(e.Kind) {
		h(rj.r, e.Status, rj.err)
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
		slog.String("reason", logReason(rj.err)),
	}
	if ve, isVE := rj.err.(*accesstoken.ValidationError); isVE {
		switch ve.Code {
		case "expired", "not_yet_valid", "issued_in_future", "audience": // the codes with facts
			attrs = append(attrs, slog.String("detail", ve.Error()))
		}
	}
	o.l.LogAttrs(ctx, slog.LevelInfo, "idsauth: request rejected", attrs...)
}

// scimLimit names the SCIM failure budget that refused a request.
func scimLimit(l limit.Limit) string {
	switch l {
	case limit.Address:
		return "address"
	case limit.SubjectAddress:
		return "tenant"
	}
	return ""
}

// send gives e to o, if there is one.
func send(ctx context.Context, o observe.Observer, e observe.Event) {
	if o != nil {
		o.Observe(ctx, e)
	}
}
