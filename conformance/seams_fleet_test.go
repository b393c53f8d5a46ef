package conformance

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/grpcauth"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/pgtest"
	"github.com/idsauth/idsauth/internal/redistest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/redisstore"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
	"github.com/idsauth/idsauth/tokenstore"
)

// The fleet's issuer URL, the same at every replica, as behind one load
// balancer: a test's client reaches the replica it means by its own dial.
const (
	seamIssuer    = "https://ids.seams.test/ids"
	seamHost      = "ids.seams.test:443"
	seamAPI       = "https://api.seams.test"
	seamAPIHost   = "api.seams.test:443"
	seamAPISecret = "seams-api-secret"
	seamOperator  = "seams-operator-secret"
	checkProc     = "/seams.v1.Seams/Check"
	watchProc     = "/seams.v1.Seams/Watch"
)

// fleet is what TestSeams runs against: three replicas of one issuer on
// one PostgreSQL registry, two sharing a Redis token store and one with a
// memory store of its own, each over mutual TLS; an HTTP API that checks
// JWTs locally and introspects at each replica; and a gRPC server and a
// Connect route introspecting at each replica.
type fleet struct {
	ca       *certtest.CA // of every server, and of the tls_client_auth clients
	key      crypto.Signer
	replicas []*seamReplica
	api      *httptest.Server
	grpc     []string         // the address of the gRPC server introspecting at each replica
	connect  *httptest.Server // /r{i}/seams.v1.Seams/Check introspects at replica i
	mcp      *httptest.Server // /r{i}/mcp introspects at replica i
	gate     *seamGate        // /g{i}/ through nginx, idsauth gate introspecting at replica i

	mu       sync.Mutex
	file     map[string]issuer.ClientConfig        // the file's clients of cases, by ID
	operator bool                                  // the file holds the administrator
	trusted  map[string]issuer.TrustedIssuerConfig // the workload issuers of cases, by client ID
	n        int                                   // cases so far, for client IDs
}

// seamReplica is one replica: an issuer, its registry, its TLS server.
type seamReplica struct {
	iss *issuer.Issuer
	reg *pgregistry.Registry
	srv *httptest.Server
}

func startFleet(t *testing.T) *fleet {
	t.Helper()
	ctx := context.Background()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{ca: certtest.NewCA(t, "seams"), key: key, file: map[string]issuer.ClientConfig{}, operator: true, trusted: map[string]issuer.TrustedIssuerConfig{}}
	pg := pgtest.Start(t)
	dbURL := pg.NewDatabase(t)
	if _, _, err := pgregistry.Migrate(ctx, dbURL); err != nil {
		t.Fatal(err)
	}
	rds := redistest.Start(t)
	quiet := slog.New(slog.DiscardHandler)
	for i := range 3 {
		var tokens tokenstore.Store = &tokenstore.Memory{}
		if i < 2 {
			rdb := redis.NewClient(&redis.Options{Addr: rds.Addr, ContextTimeoutEnabled: true})
			t.Cleanup(func() { rdb.Close() })
			tokens = redisstore.NewTokenStore(rdb, redisstore.TokenOptions{Prefix: "seams:ref:"})
		}
		iss, err := issuer.New(f.config(), issuer.WithTokenStore(tokens), issuer.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		reg, err := pgregistry.New(ctx, pgregistry.Config{URL: dbURL, Issuer: iss, Logger: quiet, Reconcile: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(reg.Close)
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err = reg.WaitLoaded(wctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/ids/", iss)
		mux.Handle("/ids/admin/", reg)
		f.replicas = append(f.replicas, &seamReplica{iss: iss, reg: reg, srv: f.tlsServer(t, mux, "ids.seams.test")})
	}
	f.startAPI(t)
	f.startRPC(t)
	f.startMCP(t)
	f.startGate(t)
	return f
}

// config is the file of every replica: the administrator (while
// f.operator), the API resource seams-api, the cases' file clients, and
// the client CA of mutual TLS.
func (f *fleet) config() *issuer.Config {
	both := []string{scope.AdminWebAPI, scope.ConnectWebAPI}
	cfg := &issuer.Config{
		Issuer: seamIssuer, Keys: []issuer.KeyConfig{{Key: f.key}}, Scopes: []string{pgregistry.AdminScope},
		APIResources: []issuer.APIResourceConfig{{Name: "seams-api", SecretHashes: []string{secret.HashSHA256(seamAPISecret).String()}, Scopes: both}},
		MTLS:         issuer.MTLSConfig{ClientCACerts: []*x509.Certificate{f.ca.Cert}},
	}
	cfg.TrustedIssuers = f.trustedIssuers()
	if f.operator {
		cfg.Clients = append(cfg.Clients, issuer.ClientConfig{ClientID: "operator", SecretHashes: []string{secret.HashSHA256(seamOperator).String()},
			Scopes: []string{pgregistry.AdminScope}, Audience: []string{seamIssuer + "/admin"}})
	}
	for _, cc := range f.file {
		cfg.Clients = append(cfg.Clients, cc)
	}
	return cfg
}

// reload gives every replica the file as f now says, edit applied first
// under the lock.
func (f *fleet) reload(t *testing.T, edit func()) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	edit()
	for i, r := range f.replicas {
		if err := r.iss.Reload(f.config()); err != nil {
			t.Fatalf("replica %d: reload: %v", i, err)
		}
	}
}

// tlsServer serves h over TLS as name (and 127.0.0.1), asking clients for
// a certificate, which the handlers check.
func (f *fleet) tlsServer(t *testing.T, h http.Handler, name string) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{f.serverCert(t, name)}, ClientAuth: tls.RequestClientCert}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func (f *fleet) serverCert(t *testing.T, name string) tls.Certificate {
	return f.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: name}, DNS: []string{name},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
}

// transport is a client's transport that reaches the issuer's URL at
// replica i, and the API's at the API, presenting cert (nil: none).
func (f *fleet) transport(i int, cert *tls.Certificate) *http.Transport {
	issuerAddr := f.replicas[i].srv.Listener.Addr().String()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool()}, ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, to string) (net.Conn, error) {
			switch to {
			case seamHost:
				to = issuerAddr
			case seamAPIHost:
				to = f.api.Listener.Addr().String()
			}
			return (&net.Dialer{}).DialContext(ctx, network, to)
		}}
	if cert != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	return tr
}

// introspecting is a validator that asks replica i about every token,
// uncached, so that each check says what the replica answers now.
func (f *fleet) introspecting(t *testing.T, i int) *accesstoken.Validator {
	t.Helper()
	v, err := accesstoken.New(context.Background(), accesstoken.Config{
		Issuer: seamIssuer, Audience: []string{seamIssuer + "/resources"}, Leeway: -1,
		Introspection: &accesstoken.Introspection{
			Endpoint: f.replicas[i].srv.URL + "/ids/connect/introspect", ClientID: "seams-api", ClientSecret: seamAPISecret,
			CacheBytes: -1, HTTPClient: &http.Client{Transport: f.transport(i, nil)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// startAPI serves the HTTP API: /local checks JWTs with the issuer's keys,
// /intro/{i} introspects at replica i; each takes DPoP and certificate-
// bound tokens and needs pd_ConnectWebApi.
func (f *fleet) startAPI(t *testing.T) {
	t.Helper()
	mux := http.NewServeMux()
	dp, err := middleware.NewDPoP(middleware.DPoPConfig{PublicURL: seamAPI})
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	route := func(path string, v accesstoken.TokenValidator) {
		mux.Handle(path, middleware.RequireBearerWithConfig(v, middleware.BearerConfig{DPoP: dp})(middleware.RequireScope(scope.ConnectWebAPI)(ok)))
	}
	local, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: seamIssuer, Audience: []string{seamIssuer + "/resources"}, Keys: f.replicas[0].iss, Leeway: -1})
	if err != nil {
		t.Fatal(err)
	}
	route("/local", local)
	route("/jwks", f.byJWKSURL(t))
	for i := range f.replicas {
		route("/intro/"+string(rune('0'+i)), f.introspecting(t, i))
	}
	f.api = f.tlsServer(t, mux, "api.seams.test")
}

// startRPC serves, for each replica, a gRPC server (health: Check, and
// Watch, a stream held open) and Connect routes (Check, and Watch, a
// stream held open) whose interceptors introspect there; all need
// pd_ConnectWebApi.
func (f *fleet) startRPC(t *testing.T) {
	t.Helper()
	mux := http.NewServeMux()
	for i := range f.replicas {
		v := f.introspecting(t, i)
		gi, err := grpcauth.New(grpcauth.Config{Validator: v, Scopes: map[string][]string{"/grpc.health.v1.Health/": {scope.ConnectWebAPI}}})
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer(append(gi.ServerOptions(), grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{f.serverCert(t, "grpc.seams.test")}, ClientAuth: tls.RequestClientCert})))...)
		healthpb.RegisterHealthServer(srv, health.NewServer())
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(l) //nolint:errcheck // ends at Stop
		t.Cleanup(srv.Stop)
		f.grpc = append(f.grpc, l.Addr().String())

		ci, err := connectauth.New(connectauth.Config{Validator: v, Scopes: map[string][]string{"/seams.v1.Seams/": {scope.ConnectWebAPI}}})
		if err != nil {
			t.Fatal(err)
		}
		h := connect.NewUnaryHandler(checkProc, func(context.Context, *connect.Request[emptypb.Empty]) (*connect.Response[emptypb.Empty], error) {
			return connect.NewResponse(&emptypb.Empty{}), nil
		}, connect.WithInterceptors(ci))
		// watch sends one message and holds the stream open until its
		// context ends.
		watch := connect.NewServerStreamHandler(watchProc, func(ctx context.Context, _ *connect.Request[emptypb.Empty], s *connect.ServerStream[emptypb.Empty]) error {
			if err := s.Send(&emptypb.Empty{}); err != nil {
				return err
			}
			<-ctx.Done()
			return ctx.Err()
		}, connect.WithInterceptors(ci))
		prefix := "/r" + string(rune('0'+i))
		mux.Handle(prefix+checkProc, http.StripPrefix(prefix, ci.ClientCertificate(h)))
		mux.Handle(prefix+watchProc, http.StripPrefix(prefix, ci.ClientCertificate(watch)))
	}
	f.connect = f.tlsServer(t, mux, "connect.seams.test")
}
