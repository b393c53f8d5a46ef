package grpcauth

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Stream is the grpc.StreamClientInterceptor that retries a stream once
// on invalid_token, while it can be replayed: nothing received yet, at
// most one message sent (see Credentials).
func (c *Credentials) Stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	tok, err := c.tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := streamer(withAttempt(ctx, tok.AccessToken), desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &clientStream{c: c, ctx: ctx, token: tok.AccessToken, cur: cs,
		open: func(ctx context.Context) (grpc.ClientStream, error) { return streamer(ctx, desc, cc, method, opts...) }}, nil
}

// clientStream is a stream that may be opened once more with a new
// token. SendMsg and RecvMsg may run on two goroutines, as gRPC allows:
// the counts and the swap are under mu, the sends and receives outside
// it (a send blocked on flow control must not hold up a receive).
type clientStream struct {
	c     *Credentials
	ctx   context.Context
	token string
	open  func(context.Context) (grpc.ClientStream, error)

	mu       sync.Mutex
	cur      grpc.ClientStream
	sent     int
	first    any  // the first message sent, replayed on the retry
	closed   bool // CloseSend was called
	received bool
	retried  bool
}

func (s *clientStream) current() grpc.ClientStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (s *clientStream) Header() (metadata.MD, error) { return s.current().Header() }
func (s *clientStream) Trailer() metadata.MD         { return s.current().Trailer() }
func (s *clientStream) Context() context.Context     { return s.current().Context() }

func (s *clientStream) SendMsg(m any) error {
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
	err := cur.SendMsg(m)
	if err == io.EOF && first && s.current() != cur {
		return nil // the retry sent it again on the new stream
	}
	return err
}

func (s *clientStream) CloseSend() error {
	s.mu.Lock()
	cur := s.cur
	s.closed = true
	s.mu.Unlock()
	return cur.CloseSend()
}

func (s *clientStream) RecvMsg(m any) error {
	cur := s.current()
	err := cur.RecvMsg(m)
	if err == nil {
		s.mu.Lock()
		s.received, s.first = true, nil
		s.mu.Unlock()
		return nil
	}
	if !invalidToken(err) {
		return err
	}
	next, ok := s.retry(cur)
	if !ok {
		return err
	}
	err = next.RecvMsg(m)
	if err == nil {
		s.mu.Lock()
		s.received, s.first = true, nil
		s.mu.Unlock()
	}
	return err
}

// retry opens the stream again with a new token and replays what was
// sent, if it can: once, before anything was received, with at most one
// message sent. mu is held throughout, so that a concurrent send either
// counted before the decision or goes to the new stream.
func (s *clientStream) retry(rejected grpc.ClientStream) (grpc.ClientStream, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retried || s.received || s.sent > 1 || s.cur != rejected {
		return nil, false
	}
	s.retried = true
	fresh, ok := s.c.renew(s.ctx, s.token)
	if !ok {
		return nil, false
	}
	next, err := s.open(withAttempt(s.ctx, fresh))
	if err != nil {
		return nil, false
	}
	// A send that fails here shows in the new stream's RecvMsg, with its
	// status.
	if s.sent == 1 {
		_ = next.SendMsg(s.first)
	}
	if s.closed {
		_ = next.CloseSend()
	}
	s.cur, s.first = next, nil
	return next, true
}
