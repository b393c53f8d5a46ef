package idsauthotel_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/idsauthotel"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/observe"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

const clientSecret = "svc-secret-Zq8"

// world is an issuer, a JWKS-fetching validator, a protected API and a
// SCIM endpoint, all reporting to one adapter, behind a handler that
// opens a "server" span per request as otelhttp would.
type world struct {
	srv     *httptest.Server
	metrics *sdkmetric.ManualReader
	spans   *tracetest.SpanRecorder
	obs     *idsauthotel.Observer
}

func newWorld(t *testing.T) *world {
	w := &world{metrics: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(w.spans))
	obs, err := idsauthotel.New(idsauthotel.Config{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(w.metrics)),
		TracerProvider: tp,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.obs = obs
	mux := http.NewServeMux()
	server := tp.Tracer("test-server")
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		ctx, sp := server.Start(r.Context(), "server")
		defer sp.End()
		mux.ServeHTTP(rw, r.WithContext(ctx))
	}))
	t.Cleanup(w.srv.Close)

	iss, err := issuer.New(&issuer.Config{
		Issuer:       w.srv.URL + "/ids",
		EphemeralKey: true,
		Clients: []issuer.ClientConfig{{
			ClientID: "svc", SecretHashes: []string{secret.HashSHA256(clientSecret).String()}, Scopes: []string{scope.AdminWebAPI},
		}},
	}, issuer.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	v, err := accesstoken.New(t.Context(), accesstoken.Config{
		Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Observer: obs,
	})
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { rw.WriteHeader(http.StatusNoContent) })
	bearer := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{Observer: obs})
	mux.Handle("/admin", bearer(middleware.RequireScope(scope.AdminWebAPI)(ok)))
	mux.Handle("/connect", bearer(middleware.RequireScope(scope.ConnectWebAPI)(ok)))
	tenants, err := middleware.NewTenants([]middleware.TenantConfig{{Tenant: "acme", TokenHashes: []string{secret.HashSHA256("acme-scim-token").String()}}})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/scim/{tenant}/Users", middleware.SCIMAuthWithConfig(tenants, middleware.SCIMConfig{Observer: obs})(ok))
	return w
}

func (w *world) do(t *testing.T, method, path, authz, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, w.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func tokenForm(id, pass string) string {
	return url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {pass}, "scope": {scope.AdminWebAPI}}.Encode()
}

// TestMetricsAndSpans runs real requests through the issuer, the
// validator, the middleware and SCIMAuth, and reads what the adapter
// recorded with the SDK's in-memory reader and span recorder.
func TestMetricsAndSpans(t *testing.T) {
	w := newWorld(t)
	status, body := w.do(t, "POST", "/ids/connect/token", "", tokenForm("svc", clientSecret))
	if status != 200 {
		t.Fatalf("token: %d %s", status, body)
	}
	token := strings.Split(strings.Split(body, `"access_token":"`)[1], `"`)[0]
	var wire []string // every error_description answered
	for _, c := range []struct {
		method, path, authz, body string
		status                    int
	}{
		{"POST", "/ids/connect/token", "", tokenForm("svc", "wrong-secret-Kp2"), 401},
		{"POST", "/ids/connect/token", "", tokenForm("mallory-<script>", "guess-Hx5"), 401},
		{"GET", "/admin", "Bearer " + token, "", 204},
		{"GET", "/admin", "Bearer " + token, "", 204},
		{"GET", "/connect", "Bearer " + token, "", 403},
		{"GET", "/admin", "", "", 401},
		{"GET", "/admin", "Bearer not.a.jwt-at-all", "", 401},
		{"GET", "/scim/acme/Users", "Bearer acme-scim-token", "", 204},
		{"GET", "/scim/acme/Users", "Bearer acme-scim-guess", "", 401},
		{"GET", "/scim/ghost/Users", "Bearer acme-scim-token", "", 401},
	} {
		status, body := w.do(t, c.method, c.path, c.authz, c.body)
		if status != c.status {
			t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, status, body, c.status)
		}
		for _, field := range []string{`"error_description":"`, `"detail":"`} { // OAuth's and SCIM's
			if _, desc, ok := strings.Cut(body, field); ok {
				wire = append(wire, strings.Split(desc, `"`)[0])
			}
		}
	}
	// A fetch failure has no request to make it happen here.
	w.obs.Observe(context.Background(), observe.Event{Kind: observe.KeysFetchFailed, Reason: "timeout"})

	var rm metricdata.ResourceMetrics
	if err := w.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	points := map[string]int64{} // "name{attrs}" -> value
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					points[m.Name+"{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					points[m.Name] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					points[m.Name+"{"+p.Attributes.Encoded(attribute.DefaultEncoder())+"}"] = int64(p.Count)
					if p.Sum <= 0 {
						t.Errorf("%s: sum %v", m.Name, p.Sum)
					}
				}
			}
		}
	}
	want := map[string]int64{
		"idsauth.tokens.issued{oauth2.client_id=svc,oauth2.scope=pd_AdminWebApi}":                                  1,
		"idsauth.tokens.refused{error.type=invalid_client,http.response.status_code=401,oauth2.client_id=svc}":     1,
		"idsauth.tokens.refused{error.type=invalid_client,http.response.status_code=401}":                          1,
		"idsauth.token.duration{idsauth.result=success}":                                                           1,
		"idsauth.token.duration{error.type=invalid_client,idsauth.result=failure}":                                 2,
		"idsauth.validations{idsauth.cache.hit=false,idsauth.result=success}":                                      1,
		"idsauth.validations{idsauth.cache.hit=true,idsauth.result=success}":                                       2,
		"idsauth.validations{error.type=malformed,idsauth.cache.hit=false,idsauth.result=failure}":                 1,
		"idsauth.rejections{http.response.status_code=403,idsauth.guard=bearer,idsauth.reason=insufficient_scope}": 1,
		"idsauth.rejections{http.response.status_code=401,idsauth.guard=bearer,idsauth.reason=no_token}":           1,
		"idsauth.rejections{http.response.status_code=401,idsauth.guard=bearer,idsauth.reason=malformed}":          1,
		"idsauth.rejections{http.response.status_code=401,idsauth.guard=scim,idsauth.reason=scim_token}":           2,
		"idsauth.scim.authentications{idsauth.result=success,idsauth.scim.tenant=acme}":                            1,
		"idsauth.scim.authentications{error.type=scim_token,idsauth.result=failure,idsauth.scim.tenant=acme}":      1,
		"idsauth.scim.authentications{error.type=scim_token,idsauth.result=failure}":                               1,
		"idsauth.jwks.fetches{idsauth.result=success}":                                                             1,
		"idsauth.jwks.fetches{error.type=timeout,idsauth.result=failure}":                                          1,
		"idsauth.jwks.keys": 1,
	}
	for k, v := range want {
		if points[k] != v {
			t.Errorf("%s = %d, want %d", k, points[k], v)
		}
	}
	for k := range points {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected data point %s = %d", k, points[k])
		}
	}

	spans := w.spans.Ended()
	count := map[string]int{}
	secrets := append([]string{clientSecret, "wrong-secret-Kp2", "guess-Hx5", "mallory", "acme-scim", "ghost", "not.a.jwt-at-all", token}, wire...)
	secrets = append(secrets, strings.Split(token, ".")...)
	for _, sp := range spans {
		count[sp.Name()]++
		text := fmt.Sprint(sp.Name(), sp.Attributes(), sp.Status(), sp.Events())
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				t.Errorf("span %s holds %.30q", text, s)
			}
		}
		if sp.Name() == "server" {
			continue
		}
		if !sp.Parent().IsValid() || sp.Parent().TraceID() != sp.SpanContext().TraceID() {
			t.Errorf("span %s is not a child of its request's span", sp.Name())
		}
		if !sp.EndTime().After(sp.StartTime()) {
			t.Errorf("span %s: %v to %v", sp.Name(), sp.StartTime(), sp.EndTime())
		}
		failed := false
		for _, a := range sp.Attributes() {
			failed = failed || a.Key == "error.type"
		}
		if failed != (sp.Status().Code == codes.Error) {
			t.Errorf("span %s: status %v with attributes %v", sp.Name(), sp.Status(), sp.Attributes())
		}
	}
	if count["idsauth.token"] != 3 || count["idsauth.validate"] != 4 {
		t.Errorf("spans: %v", count)
	}
	if len(wire) < 5 {
		t.Errorf("only %d error descriptions checked: %q", len(wire), wire)
	}
}

// TestEveryKindIsRecorded: no kind of event is dropped without a trace.
func TestEveryKindIsRecorded(t *testing.T) {
	for k := observe.ValidationSucceeded; k <= observe.SCIMRefused; k++ {
		reader := sdkmetric.NewManualReader()
		obs, err := idsauthotel.New(idsauthotel.Config{
			MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
			TracerProvider: sdktrace.NewTracerProvider(),
		})
		if err != nil {
			t.Fatal(err)
		}
		obs.Observe(context.Background(), observe.Event{Kind: k, Reason: "r", Status: 401, Duration: 1})
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		if len(rm.ScopeMetrics) == 0 || len(rm.ScopeMetrics[0].Metrics) == 0 {
			t.Errorf("%v: nothing recorded", k)
		}
	}
}
