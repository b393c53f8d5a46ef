package issuer

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/oauthwire"
)

// FuzzParseForm: parseForm reads what url.ParseQuery reads, refuses what
// it refuses, and refuses a repeated parameter (but resource) where the
// endpoint used to after url.ParseQuery, naming one that was repeated.
func FuzzParseForm(f *testing.F) {
	for _, s := range []string{
		"grant_type=client_credentials&scope=pd_AdminWebApi",
		"client_id=a%2Bb&client_secret=x+y%20z&scope=a+b",
		"resource=https%3A%2F%2Fapi.example&resource=urn:x&resource=",
		"scope=a&scope=b", "scop%65=a&scope=b", "x=1&x=2", "x=1&y=2&z",
		"a=b;c=d", "%zz=1", "a=%zz", "&&&", "=", "grant_type", "grant_type=",
		"x=1&x=2&%zz", "client_assertion=a.b.c&client_assertion_type=t&client_assertion=d",
		strings.Repeat("a=b&", 10000), strings.Repeat("&", 9999),
	} {
		f.Add(s)
	}
	names := []string{"grant_type", "scope", "client_id", "client_secret", "client_assertion_type", "client_assertion"}
	f.Fuzz(func(t *testing.T, body string) {
		got := &tokenForm{}
		terr := parseForm(body, got)
		vals, err := url.ParseQuery(body)
		if err != nil {
			if terr != notAForm {
				t.Fatalf("url.ParseQuery: %v; parseForm: %+v", err, terr)
			}
			return
		}
		var repeated []string
		for name, vs := range vals {
			if len(vs) > 1 && name != "resource" {
				repeated = append(repeated, name)
			}
		}
		if len(repeated) > 0 {
			if terr == nil || terr.id != paramTwice || !slices.ContainsFunc(repeated, func(n string) bool { return terr.arg == oauthwire.Clean(n) }) {
				t.Fatalf("%q repeated; parseForm: %+v", repeated, terr)
			}
			return
		}
		if terr != nil {
			t.Fatalf("url.ParseQuery reads it; parseForm: %+v", terr)
		}
		for p, name := range names {
			if got.has(param(p)) != vals.Has(name) || got.get(param(p)) != vals.Get(name) {
				t.Errorf("%s: %v %q, url.ParseQuery %v %q", name, got.has(param(p)), got.get(param(p)), vals.Has(name), vals.Get(name))
			}
		}
		if !slices.Equal(got.resource, vals["resource"]) {
			t.Errorf("resource %q, url.ParseQuery %q", got.resource, vals["resource"])
		}
	})
}

// FuzzBasicAuth: basicAuth reads Basic credentials as net/http's
// Request.BasicAuth reads them, short or long.
func FuzzBasicAuth(f *testing.F) {
	for _, s := range []string{
		base64.StdEncoding.EncodeToString([]byte("admin:adm%3Ain%252B%2Bsecret")), "YTpi", "YWJj", "!!!", "", "YTo=", "YTo",
		base64.StdEncoding.EncodeToString([]byte(strings.Repeat("u", 400) + ":" + strings.Repeat("p", 400))),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, encoded string) {
		r := &http.Request{Header: http.Header{"Authorization": {"Basic " + encoded}}}
		wantUser, wantPass, wantOK := r.BasicAuth()
		user, pass, ok := basicAuth(encoded)
		if user != wantUser || pass != wantPass || ok != wantOK {
			t.Fatalf("%q: %q %q %v, net/http %q %q %v", encoded, user, pass, ok, wantUser, wantPass, wantOK)
		}
	})
}

// TestBuffersAreClearedWhenGivenBack: a buffer given back holds nothing of
// what was written in it, even past its length (a write that failed), and
// one grown past the bound is not kept.
func TestBuffersAreClearedWhenGivenBack(t *testing.T) {
	bs := buffers{keep: 2048}
	b := bs.get()
	*b = append((*b)[:0], "client_secret=s3cr3t"...)
	full := (*b)[:cap(*b)]
	*b = (*b)[:3] // as if the rest had been written and then given up
	bs.put(b)
	if len(*b) != 0 || strings.Trim(string(full), "\x00") != "" {
		t.Fatalf("given back: len %d, holding %q", len(*b), strings.Trim(string(full), "\x00"))
	}
	big := make([]byte, 0, 4096)
	bs.put(&big)
	for range 10 { // sync.Pool may drop what it holds, never give back what it was not given
		if got := bs.get(); cap(*got) > 2048 {
			t.Fatalf("a buffer of %d bytes was kept", cap(*got))
		}
	}
}
