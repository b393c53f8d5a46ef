package issuer

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/observe"
)

// WithObserver sets an observer of the token endpoint: an
// observe.TokenIssued event for every token issued (client ID, scopes)
// and an observe.TokenRefused for every request refused (the OAuth error
// code, the status, the client ID only when it is registered, the limit
// that refused a 429), each with how long the request took, once per
// request. Without it (or with nil) only the logger sees refusals.
func WithObserver(o observe.Observer) Option {
	return func(iss *Issuer) {
		iss.observer = observe.Multi(iss.observer, o)
	}
}

// observeIssued reports a token issued.
func (iss *Issuer) observeIssued(r *http.Request, who attempt, d time.Duration) {
	if iss.issuedTo == nil {
		return
	}
	iss.issuedTo.Observe(r.Context(), observe.Event{Kind: observe.TokenIssued, ClientID: who.client, Scopes: who.scopes, Duration: d})
}

// observeRefusal reports a refused token request: one event, to every observer.
// The refusal log also finds the error_description and the address in
// the event's context, where no other observer can read them.
func (iss *Issuer) observeRefusal(r *http.Request, no *refusal, a answer, who attempt, d time.Duration) {
	ev := observe.Event{Kind: observe.TokenRefused, Reason: a.code, Status: a.status, ClientID: who.client, Duration: d}
	switch no.limit {
	case limit.Address:
		ev.Limit = "address"
	case limit.SubjectAddress:
		ev.Limit = "client"
	}
	ctx := context.WithValue(r.Context(), refusalKey{}, &refusalNote{no: no, addr: who.addr, endpoint: who.endpoint, api: who.api})
	iss.observer.Observe(ctx, ev)
}

// refusalNote is what the refusal log sees beyond the event: why, and an
// address, which an event never holds.
type refusalNote struct {
	no       *refusal // its description (rfc's, whatever the profile) or the log's own more precise reason
	addr     string   // as the limiter keys it; "" before the credentials were read
	endpoint string   // "introspection" or "revocation"; "" for the token endpoint
	api      string   // the registered API resource that asked, at introspection
}

type refusalKey struct{}

// refusalLog logs refused token requests at Info level.
type refusalLog struct{ l *slog.Logger }

func (o refusalLog) Observe(ctx context.Context, e observe.Event) {
	if e.Kind != observe.TokenRefused {
		return // before the context's values are walked: tokens issued are many
	}
	rf, ok := ctx.Value(refusalKey{}).(*refusalNote)
	if !ok {
		return
	}
	attrs := []slog.Attr{slog.Int("status", e.Status), slog.String("error", e.Reason), slog.String("reason", rf.no.description())}
	switch {
	case rf.addr != "" && rf.endpoint == "introspection":
		api := rf.api
		if api == "" {
			api = "(unregistered)"
		}
		attrs = append(attrs, slog.String("api", api), slog.String("address", rf.addr))
	case rf.addr != "":
		client := e.ClientID
		if client == "" {
			client = "(unregistered)"
		}
		attrs = append(attrs, slog.String("client_id", client), slog.String("address", rf.addr))
	}
	if e.Limit != "" {
		attrs = append(attrs, slog.String("limit", string(e.Limit)))
	}
	endpoint := rf.endpoint
	if endpoint == "" {
		endpoint = "token"
	}
	o.l.LogAttrs(ctx, slog.LevelInfo, "idsauth issuer: "+endpoint+" request refused", attrs...)
}

// logInterval is the least time between two lines of one logEvery.
const logInterval = 10 * time.Second

// logEvery lets a line be written at most once per logInterval, however
// often its event happens: a client asking in a loop, or every request
// while a store is down, would otherwise write one a request. It counts
// the events it held back, for the next line.
type logEvery struct {
	last atomic.Int64  // Unix nanoseconds of the last line; 0 none yet
	held atomic.Uint64 // events since the last line, not logged
}

// allow reports whether the event at now gets its line, and how many
// events were held back since the last one.
func (l *logEvery) allow(now time.Time) (bool, uint64) {
	last := l.last.Load()
	if now.UnixNano()-last < int64(logInterval) || !l.last.CompareAndSwap(last, now.UnixNano()) {
		l.held.Add(1)
		return false, 0
	}
	return true, l.held.Swap(0)
}

// storeOp is what the token store failed to do, for its log line.
type storeOp int

const (
	storeIssue storeOp = iota
	storeIntrospect
	storeRevoke
	numStoreOps
)

// storeFailed logs, at Error, that the token store failed op (msg, with
// attrs and the failures of op held back since its last line as
// "suppressed"), at most once per logInterval for each op. A refused
// token or revocation request is also logged at Info, as any refusal.
func (iss *Issuer) storeFailed(op storeOp, now time.Time, msg string, attrs ...slog.Attr) {
	ok, held := iss.storeLogged[op].allow(now)
	if !ok {
		return
	}
	iss.logger.LogAttrs(context.Background(), slog.LevelError, msg, append(attrs, slog.Uint64("suppressed", held))...)
}
