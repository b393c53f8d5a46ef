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

// An API served on two origins, a plain listener and one that asks for
// client certificates: one handler, and each listener's PublicOrigin,
// so that the documents and challenges served there name its own URLs
// (RFC 9728 §3.3), and a DPoP proof names its own origin.
func ExamplePublicOrigin() {
	md := middleware.ResourceMetadata{
		Resource:             "https://docs.example.com/webapi",
		AuthorizationServers: []string{"https://docs.example.com/ids"},
	}
	docs, err := md.Handler()
	if err != nil {
		log.Fatal(err)
	}
	ids, iss := exampleIssuer()
	defer ids.Close()
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/", docs)
	mux.Handle("/webapi/", middleware.RequireBearerWithConfig(v, middleware.BearerConfig{ResourceMetadata: &md})(http.NotFoundHandler()))

	// main := &http.Server{Addr: ":443", Handler: mux}
	// mtls := &http.Server{Addr: ":8443", Handler: middleware.PublicOrigin("https://mtls.docs.example.com:8443")(mux),
	//	TLSConfig: &tls.Config{ClientAuth: tls.RequestClientCert}}
	mtls := middleware.PublicOrigin("https://mtls.docs.example.com:8443")(mux)
	rec := httptest.NewRecorder()
	mtls.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://mtls.docs.example.com:8443/webapi/Users", nil))
	challenge := rec.Header().Get("WWW-Authenticate")
	fmt.Println(challenge)

	_, url, _ := strings.Cut(challenge, `resource_metadata="`)
	rec = httptest.NewRecorder()
	mtls.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, strings.TrimSuffix(url, `"`), nil))
	fmt.Print(rec.Body)
	// Output:
	// Bearer realm="idsauth", resource_metadata="https://mtls.docs.example.com:8443/.well-known/oauth-protected-resource/webapi/Users"
	// {"resource":"https://mtls.docs.example.com:8443/webapi/Users","authorization_servers":["https://docs.example.com/ids"],"bearer_methods_supported":["header"]}
}
