package middleware_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// One DPoP serves every route of a service, so that they share its replay
// memory and nonces. A request without a token is told both schemes.
func ExampleNewDPoP() {
	ids, iss := exampleIssuer()
	defer ids.Close()
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	if err != nil {
		log.Fatal(err)
	}
	dpop, err := middleware.NewDPoP(middleware.DPoPConfig{PublicURL: "https://docs.example.com"})
	if err != nil {
		log.Fatal(err)
	}
	protect := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{DPoP: dpop})
	rec := httptest.NewRecorder()
	protect(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/webapi/api/v3/demo/Admin/Users", nil))
	fmt.Println(rec.Code)
	for _, ch := range rec.Header().Values("WWW-Authenticate") {
		fmt.Println(ch)
	}
	// Output:
	// 401
	// Bearer realm="idsauth"
	// DPoP realm="idsauth", algs="ES256 RS256 PS256 EdDSA Ed25519"
}

// The metadata of RFC 9728 is published where the RFC puts it, one
// document per URL of the API, and every challenge names the document of
// the URL called, whose "resource" is that URL (RFC 9728 §3.3).
func ExampleResourceMetadata() {
	md := middleware.ResourceMetadata{
		Resource:             "https://docs.example.com/webapi",
		AuthorizationServers: []string{"https://docs.example.com/ids"},
		ScopesSupported:      scope.All(),
	}
	h, err := md.Handler() // mount it at "/.well-known/oauth-protected-resource/"
	if err != nil {
		log.Fatal(err)
	}

	ids, iss := exampleIssuer()
	defer ids.Close()
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	if err != nil {
		log.Fatal(err)
	}
	protect := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{ResourceMetadata: &md})
	rec := httptest.NewRecorder()
	protect(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://docs.example.com/webapi/api/v3/demo/Admin/Users", nil))
	challenge := rec.Header().Get("WWW-Authenticate")
	fmt.Println(challenge)

	_, url, _ := strings.Cut(challenge, `resource_metadata="`)
	url = strings.TrimSuffix(url, `"`)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	fmt.Print(rec.Body)
	// Output:
	// Bearer realm="idsauth", resource_metadata="https://docs.example.com/.well-known/oauth-protected-resource/webapi/api/v3/demo/Admin/Users"
	// {"resource":"https://docs.example.com/webapi/api/v3/demo/Admin/Users","authorization_servers":["https://docs.example.com/ids"],"scopes_supported":["pd_AdminWebApi","pd_ConnectWebApi"],"bearer_methods_supported":["header"]}
}
