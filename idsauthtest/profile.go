package idsauthtest

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"time"

	"github.com/idsauth/idsauth/internal/kit"
	"github.com/idsauth/idsauth/scope"
)

// CheckTokenEndpoint sends the token endpoint at tokenURL (this module's
// issuer, IdentityServer, or any other) the requests of IdentityServer's
// table (docs/CONTRACT.md §2.1) and reports with t.Errorf each answer that
// differs from profile's: an unknown client and a wrong secret (by HTTP
// Basic), no credentials, no grant_type, two resources, openid asked, and
// no scope; for every error, its status, its error code, its
// error_description where the profile fixes one, whether it carries a
// WWW-Authenticate, and Cache-Control: no-store. clientID and secret are
// a registered client's, allowed pd_AdminWebApi and client_credentials;
// the two resources asked for are of nobody's. Run it against your own
// deployment to see whether its clients can tell it from the product's
// IdentityServer. profile is "rfc" or "identityserver" (the issuer's
// Config.Profile). It sends the client's secret wrong once:
// on a live deployment, that is one failure on the client's budget.
func CheckTokenEndpoint(t TB, tokenURL, clientID, secret, profile string) {
	t.Helper()
	if profile != "rfc" && profile != "identityserver" {
		t.Fatalf(`idsauthtest: CheckTokenEndpoint: profile %q: want "rfc" or "identityserver"`, profile)
	}
	u, err := url.Parse(tokenURL)
	if err != nil || u.Host == "" {
		t.Fatalf("idsauthtest: CheckTokenEndpoint: %q is not a URL", tokenURL)
	}
	send := &kit.HTTP{Origin: u.Scheme + "://" + u.Host, Client: func(*tls.Certificate) *http.Client {
		return &http.Client{Timeout: 30 * time.Second}
	}}
	for _, r := range kit.Run(send, kit.TokenEndpoint(u.EscapedPath(), clientID, secret, profile, scope.AdminWebAPI)) {
		for _, msg := range r.Problems {
			t.Errorf("CheckTokenEndpoint %s: %s: %s", profile, r.Name, msg)
		}
	}
}
