package issuer

import (
	"context"
	"log/slog"
	"net/http"
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
	iss.auditFederated(r, who)
	if iss.issuedTo == nil {
		return
	}
	iss.issuedTo.Observe(r.Context(), observe.Event{Kind: observe.TokenIssued, ClientID: who.client, Scopes: who.scopes, Credential: who.credential, Duration: d})
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

// storeOp is what a store failed to do, for its log line: the token
// store, or the failure limiter's store.
type storeOp int

const (
	storeIssue storeOp = iota
	storeIntrospect
	storeRevoke
	storeReserve  // the limiter's store: a failure budget
	storeRemember // the limiter's store: an assertion's jti
	numStoreOps
)

// storeFailed logs, at Error, that a store failed op (msg, with attrs and
// the failures of op held back since its last line as "suppressed"), at
// most once per logevery.Interval for each op: while a store is down,
// every request fails so. The request refused is also logged at Info, as
// any refusal.
func (iss *Issuer) storeFailed(op storeOp, now time.Time, msg string, attrs ...slog.Attr) {
	ok, held := iss.storeLogged[op].Allow(now)
	if !ok {
		return
	}
	iss.logger.LogAttrs(context.Background(), slog.LevelError, msg, append(attrs, slog.Uint64("suppressed", held))...)
}
