package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

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
	param := regexp.MustCompile(`resource_metadata="([^"]*)"`)
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
				if (resp.StatusCode != 401 && resp.StatusCode != 403) || len(challenges) == 0 {
					t.Errorf("%s %s, %s: %s %q", route.method, called, name, resp.Status, challenges)
					continue
				}
				for _, ch := range challenges {
					m := param.FindStringSubmatch(ch)
					if m == nil {
						t.Errorf("%s %s, %s: %q names no metadata", route.method, called, name, ch)
						continue
					}
					md, err := http.Get(m[1])
					if err != nil {
						t.Fatal(err)
					}
					var doc struct {
						Resource string   `json:"resource"`
						Servers  []string `json:"authorization_servers"`
					}
					err = json.NewDecoder(md.Body).Decode(&doc)
					md.Body.Close()
					if err != nil || md.StatusCode != 200 || doc.Resource != called || len(doc.Servers) != 1 || doc.Servers[0] != srv.URL+"/ids" {
						t.Errorf("%s %s, %s: %s answers %s %+v %v: a strict client discards it", route.method, called, name, m[1], md.Status, doc, err)
					}
				}
			}
		}
	}
}
