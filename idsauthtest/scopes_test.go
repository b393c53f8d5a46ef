package idsauthtest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// TestAServiceWithItsOwnScopes: a service whose routes need scopes of
// its own ("orders.read", "orders.write") is tested with the kit: the
// issuer grants them at its token endpoint (as JWTs and as reference
// tokens, which its introspection reports), CheckProtected runs every
// case on its route, reference tokens included, and reports nothing,
// with a token of the other scope as the one without the route's; a
// scope the test did not name is still refused.
func TestAServiceWithItsOwnScopes(t *testing.T) {
	iss := idsauthtest.NewIssuer(t, idsauthtest.WithScopes("orders.read", "orders.write"))
	h := alice.New(middleware.RequireBearer(iss.ValidatorWithReferences()), middleware.RequireScope("orders.read")).Then(ok)
	rec := &recorder{TB: t}
	iss.CheckProtected(rec, h, "GET /orders", "orders.read")
	if len(rec.errs) > 0 {
		t.Fatalf("the service's own chain was reported:\n%s", rec.report())
	}

	api := httptest.NewServer(h)
	t.Cleanup(api.Close)
	call := func(c *http.Client, authz string) int {
		req, _ := http.NewRequest(http.MethodGet, api.URL+"/orders", nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// The token endpoint grants the service's scopes to the registered client.
	if status := call(iss.Config("orders.read").Client(context.Background()), ""); status != 200 {
		t.Fatalf("a token for orders.read from the token endpoint: %d", status)
	}
	if status := call(iss.Config("orders.write").Client(context.Background()), ""); status != 403 {
		t.Fatalf("a token for orders.write only: %d, want 403", status)
	}
	if status := call(http.DefaultClient, "Bearer "+iss.ReferenceToken(t, "orders.read", "orders.write")); status != 200 {
		t.Fatalf("a reference token for both: %d", status)
	}
	if _, err := iss.Config("orders.delete").Token(context.Background()); err == nil || !strings.Contains(err.Error(), "invalid_scope") {
		t.Fatalf("a scope the test did not name: %v, want invalid_scope", err)
	}
	if _, err := iss.Config(scope.AdminWebAPI).Token(context.Background()); err != nil {
		t.Fatalf("the product's scopes are still granted: %v", err)
	}
}

// TestWithScopesRefusesMisspellings: a scope that is no scope name, or
// one of the product's in another case, fails NewIssuer.
func TestWithScopesRefusesMisspellings(t *testing.T) {
	for _, bad := range []string{"PD_ADMINWEBAPI", "orders read", "", `"orders"`} {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			idsauthtest.NewIssuer(rec, idsauthtest.WithScopes(bad))
		}()
		<-done
		if !rec.fatal {
			t.Errorf("WithScopes(%q) was taken", bad)
		}
	}
}

// fatalRecorder records a Fatalf and ends the goroutine, as testing.T's
// does.
type fatalRecorder struct {
	testing.TB
	fatal bool
}

func (r *fatalRecorder) Fatalf(string, ...any) {
	r.fatal = true
	runtime.Goexit()
}
