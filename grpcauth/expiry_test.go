package grpcauth_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/grpcauth"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/scope"
)

// TestStreamEndsAtTokenExpiry: a stream opened with a token from a real
// issuer that lives two seconds is served until the token's exp, and
// then ends Unauthenticated "invalid_token: expired": a server-streaming
// handler that waits on its context between messages, or for its one
// message three seconds late, at the expiry; a bidirectional one blocked
// receiving, at the client's first message after it, which it does not
// get. Without the check, each would run its three seconds.
func TestStreamEndsAtTokenExpiry(t *testing.T) {
	iss := idsauthtest.NewIssuer(t, idsauthtest.WithLifetime(2*time.Second))
	logs, logger := testlog.New()
	auth := newAuth(t, grpcauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}, Logger: logger})
	c := testgrpc.NewTestServiceClient(dial(t, serve(t, auth.ServerOptions()...)))
	tok, err := iss.Config(scope.AdminWebAPI).Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	claims, err := iss.Validator().Validate(context.Background(), tok.AccessToken, accesstoken.Presentation{})
	if err != nil {
		t.Fatal(err)
	}
	exp := claims.ExpiresAt
	ctx := withToken(context.Background(), tok.AccessToken)

	const messages, every = 60, 50 * time.Millisecond // three seconds
	type result struct {
		received int
		last     time.Time // when the last message came
		err      error
		at       time.Time // when the stream ended
	}
	serverStreaming := func(n int, interval time.Duration) func() result {
		return func() (r result) {
			params := make([]*testgrpc.ResponseParameters, n)
			for i := range params {
				params[i] = &testgrpc.ResponseParameters{IntervalUs: int32(interval / time.Microsecond)}
			}
			s, err := c.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{ResponseParameters: params})
			if err != nil {
				return result{err: err, at: time.Now()}
			}
			for {
				if _, r.err = s.Recv(); r.err != nil {
					r.at = time.Now()
					return r
				}
				r.received, r.last = r.received+1, time.Now()
			}
		}
	}
	kinds := map[string]func() result{
		"server-streaming":                   serverStreaming(messages, every),
		"server-streaming, one message late": serverStreaming(1, messages*every), // its context alone ends it
		"bidirectional": func() (r result) {
			s, err := c.FullDuplexCall(ctx)
			if err != nil {
				return result{err: err, at: time.Now()}
			}
			go func() {
				for range messages {
					if s.Send(&testgrpc.StreamingOutputCallRequest{}) != nil {
						return
					}
					time.Sleep(every)
				}
				_ = s.CloseSend()
			}()
			for {
				if _, r.err = s.Recv(); r.err != nil {
					r.at = time.Now()
					return r
				}
				r.received, r.last = r.received+1, time.Now()
			}
		},
	}
	results := map[string]result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for kind, call := range kinds {
		wg.Go(func() {
			r := call()
			mu.Lock()
			results[kind] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	for kind, r := range results {
		st := status.Convert(r.err)
		if r.err == io.EOF || st.Code() != codes.Unauthenticated || st.Message() != "invalid_token: expired" {
			t.Errorf("%s: ended with %v after %d messages, want Unauthenticated \"invalid_token: expired\"", kind, r.err, r.received)
			continue
		}
		// A message sent just before the expiry may arrive just after it.
		if late := kind == "server-streaming, one message late"; r.received == 0 != late || r.last.After(exp.Add(200*time.Millisecond)) {
			t.Errorf("%s: %d messages, the last at %v, want them before the expiry at %v, and some: %t", kind, r.received, r.last, exp, !late)
		}
		if r.at.Before(exp) || r.at.After(exp.Add(time.Second)) {
			t.Errorf("%s: ended at %v, want at the expiry, %v", kind, r.at, exp)
		}
		if d := st.Details(); len(d) != 1 || !isExpiredInfo(d[0]) {
			t.Errorf("%s: details %v, want the ErrorInfo EXPIRED", kind, d)
		}
	}
	if n := strings.Count(logs.String(), `"msg":"idsauth: stream ended"`); n != len(kinds) {
		t.Errorf("%d streams logged as ended, want %d:\n%s", n, len(kinds), logs)
	}
}

func isExpiredInfo(detail any) bool {
	ei, ok := detail.(*errdetails.ErrorInfo)
	return ok && ei.GetReason() == "EXPIRED"
}
