package connectauth_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/scope"
)

// TestStreamEndsAtTokenExpiry: over each protocol, a stream opened with a
// token from a real issuer that lives two seconds is served until the
// token's exp, and then ends CodeUnauthenticated "invalid_token:
// expired": a server-streaming handler that waits on its context
// between messages, or for its one message three seconds late, at the
// expiry; a bidirectional one blocked receiving, at the client's first
// message after it, which it does not get. Without the check, each would
// run its three seconds.
func TestStreamEndsAtTokenExpiry(t *testing.T) {
	iss := idsauthtest.NewIssuer(t, idsauthtest.WithLifetime(2*time.Second))
	logs, logger := testlog.New()
	auth := newAuth(t, connectauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}, Logger: logger})
	base := serve(t, handlers(connect.WithInterceptors(auth)))
	tok, err := iss.Config(scope.AdminWebAPI).Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	claims, err := iss.Validator().Validate(context.Background(), tok.AccessToken, accesstoken.Presentation{})
	if err != nil {
		t.Fatal(err)
	}
	exp := claims.ExpiresAt
	withToken := func() context.Context { // one a call: connect writes the call's in it
		ctx, info := connect.NewClientContext(context.Background())
		info.RequestHeader().Set("Authorization", "Bearer "+tok.AccessToken)
		return ctx
	}

	const every = 50 * time.Millisecond
	type result struct {
		received int
		last     time.Time // when the last message came
		err      error
		at       time.Time // when the stream ended
	}
	tick := func(c *connect.Client[num, str], ms int32) func() result {
		return func() (r result) {
			s, err := c.CallServerStream(withToken(), connect.NewRequest(wrapperspb.Int32(ms)))
			if err != nil {
				return result{err: err, at: time.Now()}
			}
			defer s.Close()
			for s.Receive() {
				r.received, r.last = r.received+1, time.Now()
			}
			r.err, r.at = s.Err(), time.Now()
			return r
		}
	}
	chat := func(c *connect.Client[str, str]) func() result {
		return func() (r result) {
			s := c.CallBidiStream(withToken())
			defer s.CloseResponse()
			go func() {
				for range tickFor / every {
					if s.Send(wrapperspb.String("hi")) != nil {
						return
					}
					time.Sleep(every)
				}
				_ = s.CloseRequest()
			}()
			for {
				if _, r.err = s.Receive(); r.err != nil {
					r.at = time.Now()
					return r
				}
				r.received, r.last = r.received+1, time.Now()
			}
		}
	}
	calls := map[string]func() result{}
	for name, opts := range map[string][]connect.ClientOption{"connect": nil, "grpc": {connect.WithGRPC()}, "grpc-web": {connect.WithGRPCWeb()}} {
		ticks := connect.NewClient[num, str](h2c(), base+tickProcedure, opts...)
		calls[name+"/server-streaming"] = tick(ticks, int32(every/time.Millisecond))
		calls[name+"/server-streaming, one message late"] = tick(ticks, int32(tickFor/time.Millisecond)) // its context alone ends it
		calls[name+"/bidirectional"] = chat(connect.NewClient[str, str](h2c(), base+chatProcedure, opts...))
	}
	results := map[string]result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Go(func() {
			r := call()
			mu.Lock()
			results[name] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	for name, r := range results {
		var ce *connect.Error
		if !errors.As(r.err, &ce) || ce.Code() != connect.CodeUnauthenticated || ce.Message() != "invalid_token: expired" {
			t.Errorf("%s: ended with %v after %d messages, want Unauthenticated \"invalid_token: expired\"", name, r.err, r.received)
			continue
		}
		// A message sent just before the expiry may arrive just after it.
		if late := strings.HasSuffix(name, "late"); r.received == 0 != late || r.last.After(exp.Add(200*time.Millisecond)) {
			t.Errorf("%s: %d messages, the last at %v, want them before the expiry at %v, and some: %t", name, r.received, r.last, exp, !late)
		}
		if r.at.Before(exp) || r.at.After(exp.Add(time.Second)) {
			t.Errorf("%s: ended at %v, want at the expiry, %v", name, r.at, exp)
		}
		if d := ce.Details(); len(d) != 1 || !isExpiredInfo(d[0]) {
			t.Errorf("%s: details %v, want the ErrorInfo EXPIRED", name, d)
		}
	}
	if n := strings.Count(logs.String(), `"msg":"idsauth: stream ended"`); n != len(calls) {
		t.Errorf("%d streams logged as ended, want %d:\n%s", n, len(calls), logs)
	}
}

func isExpiredInfo(d *connect.ErrorDetail) bool {
	v, err := d.Value()
	ei, ok := v.(*errdetails.ErrorInfo)
	return err == nil && ok && ei.GetReason() == "EXPIRED"
}
