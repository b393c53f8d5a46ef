package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/scope"
)

// TestSCIMPaging checks startIndex and count as RFC 7644 §3.4.2.4 reads
// them, over HTTP, against 250 users (more than one full page).
func TestSCIMPaging(t *testing.T) {
	s := newInProcess(t)
	for i := 1; i <= 250; i++ {
		id := fmt.Sprintf("u%03d", i)
		if err := s.svc.scim.create("acme", &scimUser{ID: id, UserName: id}); err != nil {
			t.Fatal(err)
		}
	}
	users := s.URL + "/webapi/scim-api/v1/acme/scim/Users"
	cases := []struct {
		query             string
		startIndex, items int
		first             string // ID of the first resource, if any
		total             int
	}{
		{"", 1, scimDefaultCount, "u001", 250},
		{"?startIndex=2&count=3", 2, 3, "u002", 250},
		{"?startIndex=0", 1, scimDefaultCount, "u001", 250},
		{"?startIndex=-7&count=1", 1, 1, "u001", 250},
		{"?count=0", 1, 0, "", 250},
		{"?count=-1", 1, 0, "", 250},
		{"?count=1000", 1, scimMaxResults, "u001", 250},
		{"?startIndex=2&count=9223372036854775807", 2, scimMaxResults, "u002", 250},
		{"?count=99999999999999999999", 1, scimMaxResults, "u001", 250},
		{"?startIndex=248&count=10", 248, 3, "u248", 250},
		{"?startIndex=251", 251, 0, "", 250},
		{"?startIndex=9223372036854775807&count=9223372036854775807", 9223372036854775807, 0, "", 250},
		{"?startIndex=-9223372036854775809", 1, scimDefaultCount, "u001", 250},
		{`?filter=userName%20eq%20%22U007%22&count=5`, 1, 1, "u007", 1},
		{`?filter=userName%20eq%20%22U007%22&startIndex=2`, 2, 0, "", 1},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			r := send(t, http.DefaultClient, "GET", users+c.query, "", "Authorization", "Bearer acme-scim-token")
			var list struct {
				TotalResults, StartIndex, ItemsPerPage int
				Resources                              []scimUser
			}
			if r.status != 200 || json.Unmarshal([]byte(r.body), &list) != nil {
				t.Fatalf("got %d %s", r.status, r.body)
			}
			if list.TotalResults != c.total || list.StartIndex != c.startIndex || list.ItemsPerPage != c.items || len(list.Resources) != c.items {
				t.Fatalf("totalResults %d startIndex %d itemsPerPage %d resources %d; want %d %d %d",
					list.TotalResults, list.StartIndex, list.ItemsPerPage, len(list.Resources), c.total, c.startIndex, c.items)
			}
			if c.items > 0 && list.Resources[0].ID != c.first {
				t.Fatalf("first resource %s, want %s", list.Resources[0].ID, c.first)
			}
		})
	}
	for _, q := range []string{"count=ten", "startIndex=1.5", "count=", "startIndex=0x10", "count=%201"} {
		t.Run(q, func(t *testing.T) {
			r := send(t, http.DefaultClient, "GET", users+"?"+q, "", "Authorization", "Bearer acme-scim-token")
			want := 400
			if strings.HasSuffix(q, "=") {
				want = 200 // an empty value is an absent one
			}
			if r.status != want {
				t.Fatalf("got %d %s, want %d", r.status, r.body, want)
			}
			if want == 400 && !strings.Contains(r.body, `"scimType":"invalidValue"`) {
				t.Fatalf("body %s lacks scimType invalidValue", r.body)
			}
		})
	}
	r := send(t, http.DefaultClient, "GET", s.URL+"/webapi/scim-api/v1/acme/scim/ServiceProviderConfig", "", "Authorization", "Bearer acme-scim-token")
	if !strings.Contains(r.body, fmt.Sprintf(`"maxResults":%d`, scimMaxResults)) {
		t.Fatalf("ServiceProviderConfig does not advertise the page bound: %s", r.body)
	}
}

// TestStoreBoundsOverHTTP checks the answers a full store gives: a SCIM
// 400 without scimType for a full tenant, a 429 problem for a client
// with too many sessions.
func TestStoreBoundsOverHTTP(t *testing.T) {
	s := newInProcess(t)
	s.svc.scim = newSCIMStore(1)
	s.svc.sessions = newSessionStore(1)

	users := s.URL + "/webapi/scim-api/v1/acme/scim/Users"
	for i, want := range []int{201, 400} {
		r := send(t, http.DefaultClient, "POST", users, fmt.Sprintf(`{"userName":"user%d"}`, i), "Authorization", "Bearer acme-scim-token")
		if r.status != want {
			t.Fatalf("SCIM create %d: %d %s, want %d", i, r.status, r.body, want)
		}
		if want == 400 && (r.header.Get("Content-Type") != "application/scim+json" || strings.Contains(r.body, "scimType")) {
			t.Fatalf("a full tenant's answer: %s", r.body)
		}
	}

	connect := (&clientcredentials.Config{ClientID: "connect", ClientSecret: "connect-secret", TokenURL: s.URL + "/ids/connect/token", Scopes: []string{scope.ConnectWebAPI}}).Client(t.Context())
	sessions := s.URL + "/webapi/api/v3/demo/Connect/Session"
	for i, want := range []int{201, 429} {
		r := send(t, connect, "POST", sessions, "")
		if r.status != want {
			t.Fatalf("session %d: %d %s, want %d", i, r.status, r.body, want)
		}
		if want == 429 && r.header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("a full client's answer: %s", r.body)
		}
	}
}
