package connectauth_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/scope"
)

// TestRefusalsOverEachProtocol: a refused call carries its reason as a
// google.rpc.ErrorInfo detail over every protocol; the challenge and
// Cache-Control: no-store go where the protocol can carry them (the
// Connect protocol, gRPC-Web) and not over gRPC, whose HTTP/2 trailers
// Go's server would drop, logging each (serve fails the test on such a
// line).
func TestRefusalsOverEachProtocol(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	auth := newAuth(t, connectauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}})
	base := serve(t, handlers(connect.WithInterceptors(auth)))
	expired, narrow := iss.ExpiredToken(t, scope.AdminWebAPI), iss.Token(t, scope.ConnectWebAPI)
	for _, r := range []struct {
		name, token, message, reason, challenge string
		metadata                                map[string]string
	}{
		{"no token", "", "no bearer token", "NO_TOKEN", `Bearer realm="idsauth"`, nil},
		{"an expired token", expired, "invalid_token: expired", "EXPIRED",
			`Bearer realm="idsauth", error="invalid_token", error_description="expired"`,
			map[string]string{"error": "invalid_token", "error_description": "expired"}},
		{"a token without the scope", narrow, "insufficient_scope: pd_AdminWebApi", "INSUFFICIENT_SCOPE",
			`Bearer realm="idsauth", error="insufficient_scope", scope="pd_AdminWebApi"`,
			map[string]string{"error": "insufficient_scope", "scope": "pd_AdminWebApi"}},
	} {
		for _, p := range []struct {
			name    string
			opts    []connect.ClientOption
			headers bool // the challenge and Cache-Control arrive
		}{
			{"connect", nil, true},
			{"grpc", []connect.ClientOption{connect.WithGRPC()}, false},
			{"grpc-web", []connect.ClientOption{connect.WithGRPCWeb()}, true},
		} {
			c := newClients(base, p.opts...)
			ctx, info := connect.NewClientContext(context.Background())
			if r.token != "" {
				info.RequestHeader().Set("Authorization", "Bearer "+r.token)
			}
			for kind, call := range map[string]func(context.Context) error{"unary": c.unary, "server-streaming": c.serverStream, "bidirectional": c.bidi} {
				name := r.name + "/" + p.name + "/" + kind
				var ce *connect.Error
				if err := call(ctx); !errors.As(err, &ce) || ce.Message() != r.message {
					t.Errorf("%s: %v, want %q", name, err, r.message)
					continue
				}
				var infos []*errdetails.ErrorInfo
				for _, d := range ce.Details() {
					if v, err := d.Value(); err == nil {
						if ei, ok := v.(*errdetails.ErrorInfo); ok {
							infos = append(infos, ei)
						}
					}
				}
				if len(infos) != 1 || infos[0].GetReason() != r.reason || infos[0].GetDomain() != "idsauth" || !maps.Equal(infos[0].GetMetadata(), r.metadata) {
					t.Errorf("%s: details %v, want one ErrorInfo %s in idsauth with %v", name, infos, r.reason, r.metadata)
				}
				challenge, cache := ce.Meta().Get("WWW-Authenticate"), ce.Meta().Get("Cache-Control")
				if p.headers && (challenge != r.challenge || cache != "no-store") || !p.headers && (challenge != "" || cache != "") {
					t.Errorf("%s: WWW-Authenticate %q, Cache-Control %q; want them: %t", name, challenge, cache, p.headers)
				}
			}
		}
	}
}

// TestRefusalOnTheWire: where each protocol puts a refusal, read from
// the HTTP answer itself. Connect, unary: 401 and the headers (see
// TestRefusalsAreHTTPAnswers); Connect, streaming: 200, and the challenge
// in the end-of-stream message's metadata, not in the headers; gRPC-Web:
// 200, a trailers-only answer whose headers hold grpc-status and the
// challenge; gRPC: 200, grpc-status and grpc-status-details-bin in the
// trailers, and no challenge anywhere.
func TestRefusalOnTheWire(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	auth := newAuth(t, connectauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}})
	base := serve(t, handlers(connect.WithInterceptors(auth)))
	empty := []byte{0, 0, 0, 0, 0} // one envelope: no flags, an empty message
	for _, c := range []struct {
		name, procedure, contentType string
		body                         []byte
		inHeaders, inTrailers        []string // names that must be there; WWW-Authenticate nowhere else
		inBody                       string
	}{
		{"connect server-streaming", countProcedure, "application/connect+proto", empty, nil, nil, `"Www-Authenticate":["Bearer realm=\"idsauth\"`},
		{"grpc-web", sayProcedure, "application/grpc-web+proto", empty, []string{"Grpc-Status", "Grpc-Status-Details-Bin", "Www-Authenticate", "Cache-Control"}, nil, ""},
		{"grpc", sayProcedure, "application/grpc+proto", empty, nil, []string{"Grpc-Status", "Grpc-Status-Details-Bin"}, ""},
	} {
		req, err := http.NewRequest(http.MethodPost, base+c.procedure, bytes.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", c.contentType)
		req.Header.Set("TE", "trailers")
		resp, err := h2c().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s, want 200", c.name, resp.Status)
		}
		for _, h := range c.inHeaders {
			if resp.Header.Get(h) == "" {
				t.Errorf("%s: no %s header in %v", c.name, h, resp.Header)
			}
		}
		for _, h := range c.inTrailers {
			if resp.Trailer.Get(h) == "" {
				t.Errorf("%s: no %s trailer in %v", c.name, h, resp.Trailer)
			}
		}
		if c.inHeaders == nil && resp.Header.Get("WWW-Authenticate") != "" || resp.Trailer.Get("WWW-Authenticate") != "" {
			t.Errorf("%s: WWW-Authenticate in headers %v or trailers %v", c.name, resp.Header, resp.Trailer)
		}
		if !bytes.Contains(body, []byte(c.inBody)) {
			t.Errorf("%s: body %q lacks %s", c.name, body, c.inBody)
		}
	}
}
