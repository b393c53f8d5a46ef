package idsauthtest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/scope"
)

// TestConfigSendsAWrongSecretOnce: the kit's clientcredentials.Config
// names its auth style, so a wrong secret is one token request (x/oauth2's
// default auto-detection sends it twice, and the issuer's failure limit
// counted both), and the right one gets its token.
func TestConfigSendsAWrongSecretOnce(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	target, _ := url.Parse(iss.Server.URL)
	var requests atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	cfg := iss.Config(scope.AdminWebAPI)
	cfg.TokenURL = front.URL + "/ids/connect/token"
	cfg.ClientSecret = "wrong"
	if _, err := cfg.Token(context.Background()); err == nil {
		t.Fatal("a wrong secret got a token")
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d token requests for one wrong secret, want 1", n)
	}
	cfg.ClientSecret = iss.ClientSecret
	if _, err := cfg.Token(context.Background()); err != nil {
		t.Errorf("the right secret: %v", err)
	}
}
