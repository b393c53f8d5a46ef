package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/metrics"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestMetricsAreReadByPrometheus drives a real issuer, validator and
// middleware with one metrics.Metrics as their observer, then reads
// /metrics with Prometheus's own text parser and checks each count.
func TestMetricsAreReadByPrometheus(t *testing.T) {
	ctx := context.Background()
	m := metrics.New()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	plain, hash := secret.Generate()
	iss, err := issuer.New(&issuer.Config{
		Issuer:       srv.URL + "/ids",
		EphemeralKey: true,
		Clients: []issuer.ClientConfig{{
			ClientID: "reporting", SecretHashes: []string{hash.String()}, Scopes: []string{scope.AdminWebAPI},
		}},
	}, issuer.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	v, err := accesstoken.New(ctx, accesstoken.Config{
		Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss, Observer: m,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("GET /admin", middleware.RequireBearerWithConfig(v, middleware.BearerConfig{Observer: m})(
		middleware.RequireScope(scope.AdminWebAPI)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))))
	mux.Handle("GET /metrics", m)

	cc := clientcredentials.Config{ClientID: "reporting", ClientSecret: plain, TokenURL: iss.URL() + "/connect/token",
		Scopes: []string{scope.AdminWebAPI}, AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := cc.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wrong := cc
	wrong.ClientSecret = "wrong"
	if _, err := wrong.Token(ctx); err == nil {
		t.Fatal("a wrong secret got a token")
	}
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, want := range []struct {
		token  string
		status int
	}{{tok.AccessToken, 200}, {tok.AccessToken, 200}, {"", 401}} {
		if got := get("/admin", want.token); got != want.status {
			t.Fatalf("GET /admin: %d, want %d", got, want.status)
		}
	}

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("Content-Type %q is not the Prometheus text format", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("Prometheus's parser refuses the metrics: %v", err)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f, ok := families[name]
		if !ok {
			t.Fatalf("no family %s", name)
		}
		for _, s := range f.GetMetric() {
			if matches(s, labels) {
				switch f.GetType() {
				case dto.MetricType_COUNTER:
					return s.GetCounter().GetValue()
				case dto.MetricType_GAUGE:
					return s.GetGauge().GetValue()
				case dto.MetricType_HISTOGRAM:
					return float64(s.GetHistogram().GetSampleCount())
				}
			}
		}
		t.Fatalf("%s has no series %v", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"idsauth_tokens_issued_total", map[string]string{"client_id": "reporting", "scope": "pd_AdminWebApi"}, 1},
		{"idsauth_tokens_refused_total", map[string]string{"client_id": "reporting", "reason": "invalid_client", "status": "401"}, 1},
		{"idsauth_token_request_duration_seconds", map[string]string{"outcome": "issued"}, 1},
		{"idsauth_token_request_duration_seconds", map[string]string{"outcome": "refused"}, 1},
		{"idsauth_validations_total", map[string]string{"result": "succeeded", "cached": "false", "reason": ""}, 1},
		{"idsauth_validations_total", map[string]string{"result": "succeeded", "cached": "true", "reason": ""}, 1},
		{"idsauth_validation_duration_seconds", map[string]string{"result": "succeeded"}, 2},
		{"idsauth_rejections_total", map[string]string{"reason": "no_token", "status": "401"}, 1},
	} {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if h := families["idsauth_token_request_duration_seconds"]; h.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("idsauth_token_request_duration_seconds is a %v, want a histogram", h.GetType())
	}
}

func matches(s *dto.Metric, labels map[string]string) bool {
	got := map[string]string{}
	for _, l := range s.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range labels {
		if got[k] != v {
			return false
		}
	}
	return true
}
