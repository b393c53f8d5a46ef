package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/scope"
)

// TestEveryRouteNamesItsOwnMetadata is a strict client of RFC 9728 §3.3
// at every protected route of the example service: it calls the route
// (two data sources, each way a request is refused: no token, a bad
// token, a token without the route's scope), fetches the
// resource_metadata of every challenge, and keeps the document only if
// its "resource" is identical to the URL it called. Each must be kept.
func TestEveryRouteNamesItsOwnMetadata(t *testing.T) {
	_, logger := testlog.New()
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	svc, err := newService(t.Context(), configSource{issuer: srv.URL + "/ids"}, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = svc.routes()
	token := func(client, sc string) string {
		cc := clientcredentials.Config{ClientID: client, ClientSecret: client + "-secret", TokenURL: srv.URL + "/ids/connect/token", Scopes: []string{sc}}
		tok, err := cc.Token(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return tok.AccessToken
	}
	adminOnly, connectOnly := token("demo-admin", scope.AdminWebAPI), token("demo-connect", scope.ConnectWebAPI)
	// Every route the example service puts behind RequireBearer, with a
	// token that lacks its scope.
	for _, route := range []struct{ method, path, otherScope string }{
		{"GET", "/Admin/Users", connectOnly},
		{"GET", "/Admin/Groups", connectOnly},
		{"GET", "/Admin/Templates", connectOnly}, // the family's catch-all
		{"POST", "/Admin/AppUserGroups", connectOnly},
		{"POST", "/Connect/Documents", adminOnly},
		{"POST", "/Connect/Session", adminOnly},
		{"GET", "/Connect/Session/s-1", adminOnly},
		{"DELETE", "/Connect/Session/s-1", adminOnly},
		{"GET", "/Connect/Other", adminOnly}, // the family's catch-all
	} {
		for _, source := range []string{"demo", "another-source"} {
			called := srv.URL + "/webapi/api/v3/" + source + route.path
			for name, authz := range map[string]string{"no token": "", "a bad token": "Bearer x.y.z", "a token without the scope": "Bearer " + route.otherScope} {
				req, _ := http.NewRequest(route.method, called, nil)
				if authz != "" {
					req.Header.Set("Authorization", authz)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				challenges := resp.Header.Values("WWW-Authenticate")
				if resp.StatusCode != 401 && resp.StatusCode != 403 {
					t.Errorf("%s %s, %s: %s %q", route.method, called, name, resp.Status, challenges)
					continue
				}
				if err := strictClientKeeps(http.DefaultClient, called, challenges, srv.URL+"/ids"); err != nil {
					t.Errorf("%s %s, %s: %v", route.method, called, name, err)
				}
			}
		}
	}
}

// TestEachListenerNamesItsOwnMetadata: the example service with
// -mtls-addr serves the APIs on two origins, its plain listener and its
// TLS one; a strict client of RFC 9728 §3.3 calls each, and keeps the
// document each challenge names only if its "resource" is the URL it
// called, on that origin. The documents are the same but for it.
func TestEachListenerNamesItsOwnMetadata(t *testing.T) {
	_, logger := testlog.New()
	ctx, cancel := context.WithCancel(t.Context())
	at := listeners{addr: freeAddr(t), mtls: freeAddr(t)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, at, "", "", logger, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	pool := x509.NewCertPool()
	pool.AddCert(exampleCA())
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, origin := range []struct {
		base string
		hc   *http.Client
	}{
		{"http://" + at.addr, http.DefaultClient},
		{"https://" + at.mtls, tlsClient},
	} {
		called := origin.base + "/webapi/api/v3/demo/Admin/Users"
		var resp *http.Response
		for i := 0; ; i++ {
			var err error
			if resp, err = origin.hc.Get(called); err == nil {
				break
			}
			if i == 200 {
				t.Fatalf("%s: %v", called, err)
			}
			time.Sleep(25 * time.Millisecond)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("%s without a token: %s", called, resp.Status)
		}
		if err := strictClientKeeps(origin.hc, called, resp.Header.Values("WWW-Authenticate"), "http://"+at.addr+"/ids"); err != nil {
			t.Errorf("%s: %v", called, err)
		}
	}
}

// strictClientKeeps fetches the resource_metadata that each challenge
// names, as a strict client of RFC 9728 §3.3 does after calling the URL
// called, and says why it would discard it: none named, not found, or a
// "resource" that is not the URL called, or other authorization servers
// than issuer.
func strictClientKeeps(hc *http.Client, called string, challenges []string, issuer string) error {
	if len(challenges) == 0 {
		return errors.New("no challenge")
	}
	for _, ch := range challenges {
		m := resourceMetadataParam.FindStringSubmatch(ch)
		if m == nil {
			return fmt.Errorf("%q names no metadata", ch)
		}
		md, err := hc.Get(m[1])
		if err != nil {
			return err
		}
		var doc struct {
			Resource string   `json:"resource"`
			Servers  []string `json:"authorization_servers"`
		}
		err = json.NewDecoder(md.Body).Decode(&doc)
		md.Body.Close()
		if err != nil || md.StatusCode != 200 || doc.Resource != called || len(doc.Servers) != 1 || doc.Servers[0] != issuer {
			return fmt.Errorf("%s answers %s %+v %v: a strict client discards it", m[1], md.Status, doc, err)
		}
	}
	return nil
}

var resourceMetadataParam = regexp.MustCompile(`resource_metadata="([^"]*)"`)
