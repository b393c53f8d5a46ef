package connectauth_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/internal/testlog"
)

// The test service's procedures, served by connect's handlers over
// messages that ship with protobuf: no generated code needed.
const (
	sayProcedure   = "/idsauth.test.v1.EchoService/Say"
	countProcedure = "/idsauth.test.v1.EchoService/Count"
	chatProcedure  = "/idsauth.test.v1.EchoService/Chat"
	tickProcedure  = "/idsauth.test.v1.EchoService/Tick"
	otherProcedure = "/idsauth.test.v1.OtherService/Hello"
)

type (
	str  = wrapperspb.StringValue
	num  = wrapperspb.Int32Value
	text = connect.Request[str]
)

func clientID(ctx context.Context) (string, error) {
	c, ok := accesstoken.ClaimsFrom(ctx)
	if !ok {
		return "", connect.NewError(connect.CodeInternal, errors.New("no claims in the handler's context"))
	}
	return c.ClientID, nil
}

// handlers serves the test service with opts: Say answers the caller's
// client ID and scopes, Count sends it n times, Chat once per message,
// Tick a message every n milliseconds for tickFor, waiting on its
// context.
func handlers(opts ...connect.HandlerOption) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(sayProcedure, connect.NewUnaryHandler(sayProcedure, func(ctx context.Context, _ *text) (*connect.Response[str], error) {
		id, err := clientID(ctx)
		if err != nil {
			return nil, err
		}
		c, _ := accesstoken.ClaimsFrom(ctx)
		return connect.NewResponse(wrapperspb.String(id + " " + strings.Join(c.Scopes, " "))), nil
	}, opts...))
	mux.Handle(otherProcedure, connect.NewUnaryHandler(otherProcedure, func(ctx context.Context, _ *text) (*connect.Response[str], error) {
		return connect.NewResponse(wrapperspb.String("hello")), nil
	}, opts...))
	mux.Handle(countProcedure, connect.NewServerStreamHandler(countProcedure, func(ctx context.Context, req *connect.Request[num], s *connect.ServerStream[str]) error {
		id, err := clientID(ctx)
		if err != nil {
			return err
		}
		for range req.Msg.GetValue() {
			if err := s.Send(wrapperspb.String(id)); err != nil {
				return err
			}
		}
		return nil
	}, opts...))
	mux.Handle(tickProcedure, connect.NewServerStreamHandler(tickProcedure, func(ctx context.Context, req *connect.Request[num], s *connect.ServerStream[str]) error {
		every := time.Duration(req.Msg.GetValue()) * time.Millisecond
		for range tickFor / every {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(every):
			}
			if err := s.Send(wrapperspb.String("tick")); err != nil {
				return err
			}
		}
		return nil
	}, opts...))
	mux.Handle(chatProcedure, connect.NewBidiStreamHandler(chatProcedure, func(ctx context.Context, s *connect.BidiStream[str, str]) error {
		id, err := clientID(ctx)
		if err != nil {
			return err
		}
		for {
			if _, err := s.Receive(); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if err := s.Send(wrapperspb.String(id)); err != nil {
				return err
			}
		}
	}, opts...))
	return mux
}

// tickFor is how long Tick sends.
const tickFor = 3 * time.Second

// serve starts a real HTTP server on loopback, HTTP/1.1 and HTTP/2
// without TLS (bidirectional streams need HTTP/2), and returns its URL.
// Once the test is over, the server's error log must hold no "ignoring
// invalid trailer" line: a refusal must send over each protocol only
// what it can carry.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	errorLog := &testlog.Buffer{}
	srv.Config.ErrorLog = log.New(errorLog, "", 0)
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		for line := range strings.Lines(errorLog.String()) {
			if strings.Contains(line, "invalid trailer") {
				t.Errorf("the server logged %q", strings.TrimSpace(line))
			}
		}
	})
	return srv.URL
}

// h2c is an HTTP client that speaks HTTP/2 without TLS.
func h2c() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}}
}

// clients are the test service's client stubs, over one protocol.
type clients struct {
	say   *connect.Client[str, str]
	other *connect.Client[str, str]
	count *connect.Client[num, str]
	chat  *connect.Client[str, str]
}

func newClients(base string, opts ...connect.ClientOption) clients {
	return newClientsVia(h2c(), base, opts...)
}

// newClientsVia are the stubs over the HTTP client hc.
func newClientsVia(hc *http.Client, base string, opts ...connect.ClientOption) clients {
	return clients{
		say:   connect.NewClient[str, str](hc, base+sayProcedure, opts...),
		other: connect.NewClient[str, str](hc, base+otherProcedure, opts...),
		count: connect.NewClient[num, str](hc, base+countProcedure, opts...),
		chat:  connect.NewClient[str, str](hc, base+chatProcedure, opts...),
	}
}

// unary, serverStream and bidi make one call of each kind and return the
// error.
func (c clients) unary(ctx context.Context) error {
	_, err := c.say.CallUnary(ctx, connect.NewRequest(wrapperspb.String("hi")))
	return err
}

func (c clients) serverStream(ctx context.Context) error {
	s, err := c.count.CallServerStream(ctx, connect.NewRequest(wrapperspb.Int32(1)))
	if err != nil {
		return err
	}
	defer s.Close()
	if !s.Receive() {
		return s.Err()
	}
	return nil
}

func (c clients) bidi(ctx context.Context) error {
	s := c.chat.CallBidiStream(ctx)
	defer s.CloseResponse()
	if err := s.Send(wrapperspb.String("hi")); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	_ = s.CloseRequest()
	_, err := s.Receive()
	return err
}

func newAuth(t *testing.T, cfg connectauth.Config) *connectauth.Interceptor {
	t.Helper()
	a, err := connectauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// seen is a TokenValidator of the test's own in front of the real one,
// as a service may put one: it records every token it is asked about,
// and refuses as inactive (as a revocation would) those that reject
// names. reject runs under the lock.
type seen struct {
	next   accesstoken.TokenValidator
	reject func(token string) bool

	mu     sync.Mutex
	tokens []string
}

func (s *seen) Validate(ctx context.Context, token string, p accesstoken.Presentation) (*accesstoken.Claims, error) {
	s.mu.Lock()
	s.tokens = append(s.tokens, token)
	refuse := s.reject != nil && s.reject(token)
	s.mu.Unlock()
	if refuse {
		return nil, accesstoken.ErrInactive
	}
	return s.next.Validate(ctx, token, p)
}

func (s *seen) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens...)
}

// rejectFirst refuses the first token it is asked about, every time.
func rejectFirst() func(string) bool {
	first := ""
	return func(tok string) bool {
		if first == "" {
			first = tok
		}
		return tok == first
	}
}

func distinct(toks []string) int {
	set := map[string]bool{}
	for _, tok := range toks {
		set[tok] = true
	}
	return len(set)
}
