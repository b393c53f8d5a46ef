package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/eventtest"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/observe"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestEventsOfRequireBearer: every request gives exactly its events, once:
// the Validator's validation (from the cache or not) and the middleware's
// rejection, with the reason's code; none holds any part of a token or an
// error_description. The reject hook and the logger, observers fed by the
// same event, still see each rejection once.
func TestEventsOfRequireBearer(t *testing.T) {
	rec := &eventtest.Recorder{}
	var hooked []error
	logs, logger := testlog.New()
	s := newAPI(t, "ES256", accesstoken.Config{Observer: rec}, middleware.BearerConfig{
		Observer: rec, Logger: logger,
		OnReject: func(_ *http.Request, _ int, err error) { hooked = append(hooked, err) },
	})
	eventtest.Want(t, "NewValidator", rec.Take(), observe.Event{Kind: observe.KeysFetched, Keys: 1})

	iss := s.jwks.Issuer()
	admin := jwktest.Claims(iss, scope.AdminWebAPI, time.Hour)
	good := jwktest.Sign(t, s.key, nil, admin)
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + jwktest.Segment(jwktest.With(admin, "scope", "pd_AdminWebApi pd_ConnectWebApi")) + "." + parts[2]
	ok := observe.Event{Kind: observe.ValidationSucceeded}
	hit := observe.Event{Kind: observe.ValidationSucceeded, Cached: true}
	failed := func(reason string) observe.Event {
		return observe.Event{Kind: observe.ValidationFailed, Reason: reason}
	}
	rejected := func(status int, reason string) observe.Event {
		return observe.Event{Kind: observe.Rejected, Status: status, Reason: reason}
	}

	cases := []struct {
		name   string
		path   string
		authz  []string
		status int
		want   []observe.Event
	}{
		{"no token", "/admin", nil, 401, []observe.Event{rejected(401, "no_token")}},
		{"Basic", "/admin", []string{"Basic dXNlcjpwYXNz"}, 401, []observe.Event{rejected(401, "no_token")}},
		{"two headers", "/admin", []string{"Bearer " + good, "Bearer " + good}, 400, []observe.Event{rejected(400, "multiple_headers")}},
		{"space in the token", "/admin", []string{"Bearer " + good[:20] + " " + good[20:]}, 400, []observe.Event{rejected(400, "space_in_token")}},
		{"first use", "/admin", []string{"Bearer " + good}, 200, []observe.Event{ok}},
		{"second use, cached", "/admin", []string{"Bearer " + good}, 200, []observe.Event{hit}},
		{"without the scope", "/connect", []string{"Bearer " + good}, 403, []observe.Event{hit, rejected(403, "insufficient_scope")}},
		{"garbage", "/admin", []string{"Bearer not-a-jwt"}, 401, []observe.Event{failed("malformed"), rejected(401, "malformed")}},
		{"too large", "/admin", []string{"Bearer " + strings.Repeat("A", 20<<10)}, 401, []observe.Event{failed("too_large"), rejected(401, "too_large")}},
		{"alg none", "/admin", []string{"Bearer " + jwktest.Segment(map[string]any{"alg": "none", "typ": "at+jwt"}) + "." + jwktest.Segment(admin) + "."}, 401,
			[]observe.Event{failed("algorithm"), rejected(401, "algorithm")}},
		{"tampered", "/admin", []string{"Bearer " + tampered}, 401, []observe.Event{failed("signature"), rejected(401, "signature")}},
		{"expired", "/admin", []string{"Bearer " + jwktest.Sign(t, s.key, nil, jwktest.With(admin, "exp", time.Now().Add(-time.Hour).Unix()))}, 401,
			[]observe.Event{failed("expired"), rejected(401, "expired")}},
		{"wrong iss", "/admin", []string{"Bearer " + jwktest.Sign(t, s.key, nil, jwktest.With(admin, "iss", "https://evil.example/ids"))}, 401,
			[]observe.Event{failed("issuer"), rejected(401, "issuer")}},
		{"wrong aud", "/admin", []string{"Bearer " + jwktest.Sign(t, s.key, nil, jwktest.With(admin, "aud", "https://evil.example/api"))}, 401,
			[]observe.Event{failed("audience"), rejected(401, "audience")}},
		// An unknown kid fetches the JWKS again (the limit allows one now):
		// that fetch is an event of its own, inside the request.
		{"unknown key", "/admin", []string{"Bearer " + jwktest.Sign(t, jwktest.NewKey(t, "ES256"), nil, admin)}, 401,
			[]observe.Event{{Kind: observe.KeysFetched, Keys: 1}, failed("unknown_key"), rejected(401, "unknown_key")}},
	}
	var secrets []string
	rejections := 0
	for _, c := range cases {
		a := call(t, s.URL+c.path, c.authz...)
		if a.status != c.status {
			t.Fatalf("%s: status %d, want %d", c.name, a.status, c.status)
		}
		eventtest.Want(t, c.name, rec.Take(), c.want...)
		for _, h := range c.authz {
			secrets = append(secrets, strings.TrimPrefix(h, "Bearer "))
		}
		if a.status >= 400 && a.status != 401 || strings.Contains(a.header.Get("WWW-Authenticate"), "error=") {
			secrets = append(secrets, a.json(t)["error_description"])
		}
		if a.status >= 400 {
			rejections++
		}
	}
	eventtest.Scan(t, rec.All(), nil, secrets...)
	if len(hooked) != rejections || strings.Count(logs.String(), "idsauth: request rejected") != rejections {
		t.Errorf("%d rejections: the hook saw %d, the log has %d lines", rejections, len(hooked), strings.Count(logs.String(), "request rejected"))
	}
}

// TestEventOfAForeignValidatorError: an error of a TokenValidator of your
// own is the code "other" in the event, whatever its text; the hook still
// gets the error itself.
func TestEventOfAForeignValidatorError(t *testing.T) {
	rec := &eventtest.Recorder{}
	foreign := errors.New("token eyJhbGciOi.secret-payload rejected by my validator")
	var hooked error
	h := middleware.RequireBearerWithConfig(failingValidator{foreign}, middleware.BearerConfig{
		Observer: rec, OnReject: func(_ *http.Request, _ int, err error) { hooked = err },
	})(http.NotFoundHandler())
	req, _ := http.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", "Bearer eyJhbGciOi.secret-payload.sig")
	h.ServeHTTP(discard{}, req)
	eventtest.Want(t, "foreign error", rec.Take(), observe.Event{Kind: observe.Rejected, Status: 401, Reason: "other"})
	eventtest.Scan(t, rec.All(), nil, "eyJhbGciOi.secret-payload.sig", foreign.Error(), "token invalid")
	if hooked != foreign {
		t.Errorf("hook got %v", hooked)
	}
}

// TestLogOfAValidationErrorOfOnesOwn: a TokenValidator of your own may
// refuse with an *accesstoken.ValidationError it builds, without a cause:
// the log line says its code's reason, and its facts when it has some,
// as for the package's own.
func TestLogOfAValidationErrorOfOnesOwn(t *testing.T) {
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{&accesstoken.ValidationError{Code: "signature"}, []string{`"reason":"signature invalid"`}},
		{&accesstoken.ValidationError{Code: "expired", Expiry: exp, Now: exp}, []string{`"reason":"token expired"`, `"detail":"token invalid"`}},
	} {
		logs, logger := testlog.New()
		h := middleware.RequireBearerWithConfig(failingValidator{tc.err}, middleware.BearerConfig{Logger: logger})(http.NotFoundHandler())
		req, _ := http.NewRequest("GET", "/", nil)
		req.Header.Set("Authorization", "Bearer a.b.c")
		h.ServeHTTP(discard{}, req)
		for _, w := range tc.want {
			if !strings.Contains(logs.String(), w) {
				t.Errorf("%v: log %s, want %s", tc.err, logs.String(), w)
			}
		}
	}
}

type failingValidator struct{ err error }

func (f failingValidator) Validate(context.Context, string, accesstoken.Presentation) (*accesstoken.Claims, error) {
	return nil, f.err
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// TestEventsOfSCIMAuth: one event per request, naming the tenant only
// when it is registered, with the limit that refused a 429; none holds a
// token.
func TestEventsOfSCIMAuth(t *testing.T) {
	tenants := tenantsOf(t, "acme", secret.HashSHA256("acme-token"))
	k := jwktest.NewKey(t, "ES256")
	v, err := accesstoken.New(t.Context(), accesstoken.Config{Issuer: iss, AnyAudience: true, Keys: newCountingKeys(k)})
	if err != nil {
		t.Fatal(err)
	}
	rec := &eventtest.Recorder{}
	var hooked int
	srv := scimServer(t, tenants, middleware.SCIMConfig{
		Observer: rec, OnReject: func(*http.Request, int, error) { hooked++ },
		IdentityTokens: v, IdentityTokenScopes: []string{scope.AdminWebAPI},
		Limits: limit.Config{FailedAttemptsPerSubject: 2, FailedAttemptsPerAddress: 4, TrustedProxyHeader: "X-Forwarded-For"},
	})
	admin := jwktest.Sign(t, k, nil, jwktest.Claims(iss, scope.AdminWebAPI, time.Hour))
	connect := jwktest.Sign(t, k, nil, jwktest.Claims(iss, scope.ConnectWebAPI, time.Hour))
	refused := func(status int, reason, tenant string, limit string) observe.Event {
		return observe.Event{Kind: observe.SCIMRefused, Status: status, Reason: reason, Tenant: tenant, Limit: limit}
	}
	authed := func(tenant string) observe.Event {
		return observe.Event{Kind: observe.SCIMAuthenticated, Tenant: tenant}
	}
	long := "Bearer " + strings.Repeat("x", middleware.MaxSCIMTokenLength+1)

	cases := []struct {
		name, tenant, authz, addr string
		status                    int
		want                      observe.Event
	}{
		{"right token", "acme", "Bearer acme-token", "192.0.2.1", 200, authed("acme")},
		{"no token", "acme", "", "192.0.2.1", 401, refused(401, "scim_token", "", "")},
		{"over-long token", "acme", long, "192.0.2.1", 401, refused(401, "scim_token", "", "")},
		{"wrong token", "acme", "Bearer acme-guess-1", "192.0.2.2", 401, refused(401, "scim_token", "acme", "")},
		{"unknown tenant", "ghost-tenant", "Bearer acme-token", "192.0.2.3", 401, refused(401, "scim_token", "", "")},
		{"identity token", "acme", "Bearer " + admin, "192.0.2.1", 200, authed("acme")},
		{"identity token, unknown tenant", "ghost-tenant", "Bearer " + admin, "192.0.2.1", 200, authed("")},
		{"identity token without the scope", "acme", "Bearer " + connect, "192.0.2.1", 403, refused(403, "insufficient_scope", "acme", "")},
		{"wrong token again", "acme", "Bearer acme-guess-2", "192.0.2.2", 401, refused(401, "scim_token", "acme", "")},
		{"tenant budget spent", "acme", "Bearer acme-guess-3", "192.0.2.2", 429, refused(429, "too_many_failures", "acme", "tenant")},
	}
	for i := range 3 {
		cases = append(cases, struct {
			name, tenant, authz, addr string
			status                    int
			want                      observe.Event
		}{"unknown tenant " + strconv.Itoa(i), "ghost-" + strconv.Itoa(i), "Bearer ghost-guess", "192.0.2.3", 401, refused(401, "scim_token", "", "")})
	}
	cases = append(cases, struct {
		name, tenant, authz, addr string
		status                    int
		want                      observe.Event
	}{"address budget spent", "ghost-9", "Bearer ghost-guess", "192.0.2.3", 429, refused(429, "too_many_failures", "", "address")})

	secrets := []string{admin, connect, "acme-token", "acme-guess", "ghost", long[len("Bearer "):],
		"The authorization header is invalid or missing", "the token does not grant SCIM access", "Too many failed attempts"}
	rejections := 0
	for _, c := range cases {
		a := callFrom(t, scimURL(srv, c.tenant), c.authz, c.addr)
		if a.status != c.status {
			t.Fatalf("%s: status %d, want %d: %s", c.name, a.status, c.status, a.body)
		}
		eventtest.Want(t, c.name, rec.Take(), c.want)
		if a.status != 200 {
			rejections++
		}
	}
	eventtest.Scan(t, rec.All(), []string{"acme"}, secrets...)
	if hooked != rejections {
		t.Errorf("the hook saw %d of %d rejections", hooked, rejections)
	}
}
