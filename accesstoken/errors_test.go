package accesstoken_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/scope"
)

// TestValidationErrorFacts: a refusal carries facts for logs, errors.Is
// finds its reason, and the wire still says only the fixed reason.

// TestValidationErrorFacts: a refusal carries facts for logs, errors.Is
// finds its reason, and the wire still says only the fixed reason.
func TestValidationErrorFacts(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	now := time.Unix(1_900_000_000, 0)
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k), CacheSize: -1, Now: func() time.Time { return now }})
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	base := `"iss":"` + iss + `","aud":"` + iss + `/resources"`
	cases := []struct {
		name    string
		payload string
		reason  error
		check   func(*accesstoken.ValidationError) bool
		text    string
	}{
		{"expired", `{` + base + `,"exp":` + n(now.Unix()-3600) + `}`, accesstoken.ErrExpired,
			func(e *accesstoken.ValidationError) bool {
				return e.Expiry.Equal(now.Add(-time.Hour)) && e.Now.Equal(now)
			}, "token expired: exp 2030-03-17T16:46:40Z, now 2030-03-17T17:46:40Z"},
		{"not yet valid", `{` + base + `,"exp":` + n(now.Unix()+7200) + `,"nbf":` + n(now.Unix()+3600) + `}`, accesstoken.ErrNotYetValid,
			func(e *accesstoken.ValidationError) bool { return e.NotBefore.Equal(now.Add(time.Hour)) }, "token not valid yet: nbf "},
		// An "iss" no issuer has is refused before the signature is
		// checked, so it is no fact: even under the trusted key's
		// signature, it is not reported.
		{"issuer, refused before the signature", `{"iss":"https://other.example/ids","aud":"` + iss + `/resources","exp":` + n(now.Unix()+60) + `}`, accesstoken.ErrIssuer,
			func(e *accesstoken.ValidationError) bool { return e.Expiry.IsZero() && e.Audience == nil }, "token issuer not accepted"},
		{"audience", `{"iss":"` + iss + `","aud":["a","b"],"exp":` + n(now.Unix()+60) + `}`, accesstoken.ErrAudience,
			func(e *accesstoken.ValidationError) bool { return len(e.Audience) == 2 && e.Audience[1] == "b" }, `token audience not accepted: aud ["a" "b"]`},
		{"malformed has no facts", `[1]`, accesstoken.ErrMalformed,
			func(e *accesstoken.ValidationError) bool { return e.Expiry.IsZero() }, "token is malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Validate(context.Background(), signPayload(t, k, c.payload), accesstoken.Presentation{})
			var ve *accesstoken.ValidationError
			if !errors.As(err, &ve) || ve.Unwrap() != c.reason || !errors.Is(err, c.reason) {
				t.Fatalf("err = %#v, want a ValidationError for %v", err, c.reason)
			}
			if !c.check(ve) {
				t.Errorf("facts missing: %#v", ve)
			}
			if !strings.HasPrefix(err.Error(), c.text) {
				t.Errorf("Error() = %q, want prefix %q", err.Error(), c.text)
			}
		})
	}
	t.Run("before the signature, no facts but the reason", func(t *testing.T) {
		_, err := v.Validate(context.Background(), strings.Repeat("a", 20000), accesstoken.Presentation{})
		var ve *accesstoken.ValidationError
		if !errors.As(err, &ve) || ve.Code != "too_large" || !errors.Is(err, accesstoken.ErrTooLarge) || err.Error() != "token is too large" {
			t.Fatalf("err = %#v", err)
		}
	})
}

// TestNewClaims: a TokenValidator of one's own builds Claims whose
// Decode works, with the form checks of Validate.
func TestNewClaims(t *testing.T) {
	c, err := accesstoken.NewClaims([]byte(`{"iss":"https://ids.example/ids","sub":"svc","client_id":"svc","aud":"api","scope":"pd_AdminWebApi","exp":1900000000,"tenant":"acme"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Issuer != "https://ids.example/ids" || c.ClientID != "svc" || len(c.Audience) != 1 || !c.Scopes.Has(scope.AdminWebAPI) || c.ExpiresAt.Unix() != 1900000000 {
		t.Errorf("claims = %+v", c)
	}
	var extra struct {
		Tenant string `json:"tenant"`
	}
	if err := c.Decode(&extra); err != nil || extra.Tenant != "acme" {
		t.Errorf("Decode: %v %q", err, extra.Tenant)
	}
	for payload, want := range map[string]error{
		`{"exp":"soon"}`:         accesstoken.ErrMalformed,
		`not json`:               accesstoken.ErrMalformed,
		`{"scope":42}`:           accesstoken.ErrScopeClaim,
		`{"scope":"a\u00a0b"}`:   accesstoken.ErrScopeName,
		`{"aud":["a",1]}`:        accesstoken.ErrMalformed,
		`{"iss":"x","EXP":true}`: nil,
		`{"iss":"x","iss":"y"}`:  accesstoken.ErrMalformed,
	} {
		if _, err := accesstoken.NewClaims([]byte(payload)); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("%s: err = %v, want %v", payload, err, want)
		}
	}
	// The members of cnf are named exactly too: "JKT" binds the token to
	// no DPoP key, so that it passes neither as Bearer nor with a proof.
	c, err = accesstoken.NewClaims([]byte(`{"iss":"x","cnf":{"JKT":"0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}`))
	if err != nil || c.JKT != "" {
		t.Errorf("cnf.JKT read as jkt: %q %v", c.JKT, err)
	}
}
