package grpcauth_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/grpcauth"
)

// testService answers with what the interceptor left in the context: the
// client ID of the token's claims, read by accesstoken.ClaimsFrom.
type testService struct {
	testgrpc.UnimplementedTestServiceServer
}

func clientID(ctx context.Context) (string, error) {
	c, ok := accesstoken.ClaimsFrom(ctx)
	if !ok {
		return "", status.Error(codes.Internal, "no claims in the handler's context")
	}
	return c.ClientID, nil
}

func (testService) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func (testService) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	id, err := clientID(ctx)
	if err != nil {
		return nil, err
	}
	c, _ := accesstoken.ClaimsFrom(ctx)
	return &testgrpc.SimpleResponse{Username: id, OauthScope: strings.Join(c.Scopes, " ")}, nil
}

// StreamingOutputCall sends a message per response parameter, each
// after its interval_us, waiting on the stream's context.
func (testService) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
	id, err := clientID(stream.Context())
	if err != nil {
		return err
	}
	for _, p := range req.GetResponseParameters() {
		if p.GetIntervalUs() > 0 {
			select {
			case <-stream.Context().Done():
				return stream.Context().Err()
			case <-time.After(time.Duration(p.GetIntervalUs()) * time.Microsecond):
			}
		}
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: []byte(id)}}); err != nil {
			return err
		}
	}
	return nil
}

func (testService) FullDuplexCall(stream grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	id, err := clientID(stream.Context())
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: []byte(id)}}); err != nil {
			return err
		}
	}
}

// serve starts a real gRPC server on a loopback TCP port with the test
// service, health and reflection, behind opts, and returns its address.
func serve(t *testing.T, opts ...grpc.ServerOption) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(srv, testService{})
	healthpb.RegisterHealthServer(srv, health.NewServer())
	reflection.Register(srv)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// dial connects to addr without transport security, with opts.
func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func newAuth(t *testing.T, cfg grpcauth.Config) *grpcauth.Interceptor {
	t.Helper()
	a, err := grpcauth.New(cfg)
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
