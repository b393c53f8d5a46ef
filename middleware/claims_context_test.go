package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// Claims put in a context by hand read back with Decode, and a
// RequireScope after them checks their scopes.
func TestContextWithClaims(t *testing.T) {
	c, err := accesstoken.NewClaims([]byte(`{"iss":"https://ids.example","sub":"c","client_id":"c","scope":"pd_AdminWebApi","exp":4102444800,"tenant_hint":"acme"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := accesstoken.ClaimsFrom(accesstoken.ContextWithClaims(context.Background(), nil)); ok {
		t.Fatal("nil claims were stored")
	}
	ctx := accesstoken.ContextWithClaims(context.Background(), c)
	got, ok := accesstoken.ClaimsFrom(ctx)
	var extra struct {
		Hint string `json:"tenant_hint"`
	}
	if !ok || got != c || got.Decode(&extra) != nil || extra.Hint != "acme" {
		t.Fatalf("ClaimsFrom = %v %v, hint %q", got, ok, extra.Hint)
	}
	for need, want := range map[string]int{scope.AdminWebAPI: 200, scope.ConnectWebAPI: 403} {
		h := middleware.RequireScope(need)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
		if rec.Code != want {
			t.Errorf("RequireScope(%s) after ContextWithClaims: %d, want %d", need, rec.Code, want)
		}
	}
}
