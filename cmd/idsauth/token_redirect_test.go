package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestTokenCommandFollowsNoRedirect: idsauth token against a token
// endpoint that answers 307 to another origin fails naming the redirect,
// and the other origin receives nothing; -param sends extra parameters,
// and refuses one the request sets itself.
func TestTokenCommandFollowsNoRedirect(t *testing.T) {
	bin := build(t)
	var mu sync.Mutex
	var stolen []string
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		stolen = append(stolen, r.Header.Get("Authorization")+" "+string(b))
		mu.Unlock()
	}))
	defer thief.Close()
	var form url.Values
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("GET /ids/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL + "/ids", "token_endpoint": srv.URL + "/ids/connect/token"})
	})
	mux.HandleFunc("POST /ids/connect/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.PostForm.Get("audience") != "" {
			form = r.PostForm
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"access_token":"a.b.c","token_type":"Bearer","expires_in":60}`)
			return
		}
		http.Redirect(w, r, thief.URL+"/token", http.StatusTemporaryRedirect)
	})
	base := []string{"token", "-issuer", srv.URL + "/ids", "-client-id", "reporting", "-secret-env", "SECRET"}
	env := []string{"SECRET=s3cret"}
	r := idsauth(t, bin, "", env, base...)
	if r.code != 1 || !strings.Contains(r.stderr, "redirect") || !strings.Contains(r.stderr, thief.URL) || strings.Contains(r.stderr, "s3cret") {
		t.Errorf("a redirecting token endpoint: %+v, want exit 1 naming the redirect and its origin", r)
	}
	if len(stolen) > 0 {
		t.Errorf("the other origin received %q", stolen)
	}

	r = idsauth(t, bin, "", env, append(base, "-param", "audience=https://api.example")...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "a.b.c" || form.Get("audience") != "https://api.example" {
		t.Errorf("-param audience=...: %+v, form %v", r, form)
	}
	for _, p := range []string{"client_secret=x", "grant_type=password", "Scope=x", "noequals"} {
		if r := idsauth(t, bin, "", env, append(base, "-param", p)...); r.code != 2 {
			t.Errorf("-param %s: %+v, want a usage error", p, r)
		}
	}
}
