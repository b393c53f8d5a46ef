package connectauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"connectrpc.com/connect"
)

// WrapStreamingClient sends a client's stream with the token, and opens it
// once more with a new one on invalid_token while it can be replayed:
// nothing received yet, at most one message sent (see ClientInterceptor).
func (c *ClientInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		tok, err := c.tokens.Token(ctx)
		if err != nil {
			return failedConn{next(ctx, spec), err}
		}
		actx, a := withAttempt(ctx, tok.AccessToken)
		conn := next(actx, spec)
		return &clientConn{StreamingClientConn: conn, c: c, ctx: ctx, spec: spec, next: next, token: tok.AccessToken, cur: conn, attempt: a}
	}
}

// failedConn is a stream that is never sent: every call returns err, and
// nothing reaches the conn under it (whose request starts with its first
// Send or CloseRequest, and whose CloseResponse would wait for an answer).
type failedConn struct {
	connect.StreamingClientConn
	err error
}

func (f failedConn) Send(any) error       { return f.err }
func (f failedConn) Receive(any) error    { return f.err }
func (f failedConn) CloseRequest() error  { return f.err }
func (f failedConn) CloseResponse() error { return nil }

// clientConn is a stream that may be opened once more with a new token.
// Send and Receive may run on two goroutines, as Connect allows: the
// counts and the swap are under mu, the sends and receives outside it.
// The embedded conn is the first; cur is the one in use.
type clientConn struct {
	connect.StreamingClientConn
	c     *ClientInterceptor
	ctx   context.Context
	spec  connect.Spec
	next  connect.StreamingClientFunc
	token string

	mu       sync.Mutex
	cur      connect.StreamingClientConn
	attempt  *attempt // cur's
	sent     int
	first    any
	closed   bool
	received bool
	retried  bool
}

func (s *clientConn) current() connect.StreamingClientConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (s *clientConn) RequestHeader() http.Header  { return s.current().RequestHeader() }
func (s *clientConn) ResponseHeader() http.Header { return s.current().ResponseHeader() }
func (s *clientConn) ResponseTrailer() http.Header {
	return s.current().ResponseTrailer()
}
func (s *clientConn) CloseResponse() error { return s.current().CloseResponse() }

func (s *clientConn) Send(m any) error {
	s.mu.Lock()
	cur := s.cur
	switch s.sent {
	case 0:
		s.first = m
	case 1:
		s.first = nil // a second message: no retry now, nothing to keep
	}
	s.sent++
	first := s.sent == 1
	s.mu.Unlock()
	err := cur.Send(m)
	if errors.Is(err, io.EOF) && first && s.current() != cur {
		return nil // the retry sent it again on the new stream
	}
	return err
}

func (s *clientConn) CloseRequest() error {
	s.mu.Lock()
	cur := s.cur
	s.closed = true
	s.mu.Unlock()
	return cur.CloseRequest()
}

func (s *clientConn) Receive(m any) error {
	s.mu.Lock()
	cur, a := s.cur, s.attempt
	s.mu.Unlock()
	err := unsent(a, cur.Receive(m))
	if err == nil || !invalidToken(err) {
		s.markReceived(err)
		return err
	}
	next, a, ok := s.retry(cur)
	if !ok {
		return err
	}
	err = unsent(a, next.Receive(m))
	s.markReceived(err)
	return err
}

func (s *clientConn) markReceived(err error) {
	if err == nil {
		s.mu.Lock()
		s.received, s.first = true, nil
		s.mu.Unlock()
	}
}

// retry opens the stream again with a new token, with the headers the
// caller added, and replays what was sent, if it can: once, before anything
// was received, with at most one message sent. mu is held throughout, so
// that a concurrent send either counted before the decision or goes to
// the new stream.
func (s *clientConn) retry(rejected connect.StreamingClientConn) (connect.StreamingClientConn, *attempt, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retried || s.received || s.sent > 1 || s.cur != rejected {
		return nil, nil, false
	}
	s.retried = true
	fresh, ok := s.c.renew(s.ctx, s.token)
	if !ok {
		return nil, nil, false
	}
	actx, a := withAttempt(s.ctx, fresh)
	next := s.next(actx, s.spec)
	h := next.RequestHeader()
	for name, values := range rejected.RequestHeader() {
		if _, set := h[name]; !set { // the protocol's own are set anew
			h[name] = append([]string(nil), values...)
		}
	}
	_ = rejected.CloseResponse()
	// A send that fails here shows in the new stream's Receive, with its
	// error.
	if s.sent == 1 {
		_ = next.Send(s.first)
	}
	if s.closed {
		_ = next.CloseRequest()
	}
	s.cur, s.attempt, s.first = next, a, nil
	return next, a, true
}
