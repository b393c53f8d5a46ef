package mcpauth_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/mcpauth"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// benchResource is the MCP endpoint of the benchmarks.
const benchResource = "http://mcp.bench.test/mcp"

var benchBare = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

// benchRun sends req through h b.N times, its body, when given, made
// anew each time, and checks the answer first.
func benchRun(b *testing.B, h http.Handler, token string, body []byte) {
	req := httptest.NewRequest(http.MethodPost, benchResource, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rd := bytes.NewReader(body)
	send := func(w http.ResponseWriter) {
		if body != nil {
			rd.Reset(body)
			req.Body = io.NopCloser(rd)
		}
		h.ServeHTTP(w, req)
	}
	check := httptest.NewRecorder()
	send(check)
	if check.Code != http.StatusNoContent {
		b.Fatalf("the handler answered %d %s", check.Code, check.Body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		send(httptest.NewRecorder())
	}
}

// BenchmarkMCP: one protected call of an MCP endpoint per iteration, the
// endpoint a handler that does nothing, the same ES256 token for every
// row: the middleware's warm path (RequireBearer, its cache on) beside
// mcpauth's Guard in front of mcp-go (Handler) and of go-sdk (GoSDK:
// with go-sdk's RequireBearerToken inside), a Guard whose tools have
// scopes reading a tools/call body, and go-sdk's RequireBearerToken alone
// with a golang-jwt verifier (keyfunc's JWKS; signature, exp, iss and
// aud checked on every call, as go-sdk's documentation has one write
// it), and RequireBearerToken alone, with a verifier that checks
// nothing: go-sdk's own share of GoSDK. The budget: a Guard adds at most
// 0.3 µs to the warm path.
func BenchmarkMCP(b *testing.B) {
	k := jwktest.NewKey(b, "ES256")
	j := jwktest.NewJWKS(b, k)
	claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, 24*time.Hour)
	claims["aud"] = []string{benchResource}
	token := jwktest.Sign(b, k, nil, claims)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: j.Issuer(), Audience: []string{benchResource}})
	if err != nil {
		b.Fatal(err)
	}
	guard := func(tools map[string][]string) *mcpauth.Guard {
		g, err := mcpauth.New(ctx, mcpauth.Config{Resource: benchResource, Issuer: j.Issuer(), Validator: v, ToolScopes: tools})
		if err != nil {
			b.Fatal(err)
		}
		return g
	}
	call := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_users","arguments":{"page":1,"pageSize":50}}}`)
	b.Run("bare", func(b *testing.B) { benchRun(b, benchBare, token, nil) })
	b.Run("idsauth-warm", func(b *testing.B) { benchRun(b, middleware.RequireBearer(v)(benchBare), token, nil) })
	b.Run("mcpauth-mcp-go", func(b *testing.B) { benchRun(b, guard(nil).Handler(benchBare), token, nil) })
	b.Run("mcpauth-go-sdk", func(b *testing.B) { benchRun(b, guard(nil).GoSDK(benchBare), token, nil) })
	b.Run("mcpauth-go-sdk-tool-scopes", func(b *testing.B) {
		benchRun(b, guard(map[string][]string{"list_users": {scope.AdminWebAPI}}).GoSDK(benchBare), token, call)
	})
	// go-sdk's own share of GoSDK: RequireBearerToken with a verifier
	// that checks nothing, before a handler that does nothing.
	fixed := &auth.TokenInfo{Scopes: []string{scope.AdminWebAPI}, Expiration: time.Now().Add(time.Hour), UserID: "bench"}
	b.Run("go-sdk-RequireBearerToken-alone", func(b *testing.B) {
		benchRun(b, auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return fixed, nil }, nil)(benchBare), token, nil)
	})
	b.Run("go-sdk-RequireBearerToken+golang-jwt", func(b *testing.B) {
		kf, err := keyfunc.NewDefaultCtx(ctx, []string{j.JWKSURL()})
		if err != nil {
			b.Fatal(err)
		}
		verifier := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			var c struct {
				jwt.RegisteredClaims
				Scope string `json:"scope"`
			}
			if _, err := jwt.ParseWithClaims(token, &c, kf.Keyfunc, jwt.WithValidMethods([]string{"ES256"}),
				jwt.WithIssuer(j.Issuer()), jwt.WithAudience(benchResource), jwt.WithExpirationRequired()); err != nil {
				return nil, errors.Join(auth.ErrInvalidToken, err)
			}
			return &auth.TokenInfo{Scopes: strings.Fields(c.Scope), Expiration: c.ExpiresAt.Time, UserID: c.Subject}, nil
		}
		benchRun(b, auth.RequireBearerToken(verifier, nil)(benchBare), token, nil)
	})
}
