package accesstoken_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/scope"
)

// TestCertificateBoundTokens: a token bound to a client certificate
// (cnf "x5t#S256", RFC 8705 §3.1) is accepted with that certificate
// alone: another one is refused whatever AllowBoundTokens says, none
// unless it says so; bearer and DPoP tokens keep their rules beside it,
// from the cache as on the first validation.
func TestCertificateBoundTokens(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	mine := clientcert.Thumbprint(certtest.SelfSigned(t, certtest.Leaf{}).Leaf.Raw)
	other := clientcert.Thumbprint(certtest.SelfSigned(t, certtest.Leaf{}).Leaf.Raw)
	claims := jwktest.Claims(iss, scope.AdminWebAPI, time.Hour)
	bound := jwktest.Sign(t, k, nil, jwktest.With(claims, "cnf", map[string]any{"x5t#S256": mine}))
	dpop := jwktest.Sign(t, k, nil, jwktest.With(claims, "cnf", map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}))
	both := jwktest.Sign(t, k, nil, jwktest.With(claims, "cnf", map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I", "x5t#S256": mine}))
	unknown := jwktest.Sign(t, k, nil, jwktest.With(claims, "cnf", map[string]any{"x5t": "c2hhMQ"}))
	plain := jwktest.Sign(t, k, nil, claims)
	for _, allow := range []bool{false, true} {
		for _, cache := range []int{0, -1} {
			v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k), AllowBoundTokens: allow, CacheSize: cache})
			for _, tc := range []struct {
				name  string
				token string
				p     accesstoken.Presentation
				want  error // nil: accepted
			}{
				{"its certificate", bound, accesstoken.Presentation{CertThumbprint: mine}, nil},
				{"another certificate", bound, accesstoken.Presentation{CertThumbprint: other}, accesstoken.ErrWrongCertificate},
				{"no certificate", bound, accesstoken.Presentation{}, map[bool]error{false: accesstoken.ErrBoundToken, true: nil}[allow]},
				{"with DPoP", bound, accesstoken.Presentation{DPoP: true, CertThumbprint: mine}, accesstoken.ErrUnboundToken},
				{"a plain token with a certificate", plain, accesstoken.Presentation{CertThumbprint: other}, nil},
				{"a DPoP-bound token as Bearer with a certificate", dpop, accesstoken.Presentation{CertThumbprint: mine}, map[bool]error{false: accesstoken.ErrBoundToken, true: nil}[allow]},
				{"bound to both, with both", both, accesstoken.Presentation{DPoP: true, CertThumbprint: mine}, nil},
				{"bound to both, DPoP alone", both, accesstoken.Presentation{DPoP: true}, map[bool]error{false: accesstoken.ErrBoundToken, true: nil}[allow]},
				{"bound to both, another certificate", both, accesstoken.Presentation{DPoP: true, CertThumbprint: other}, accesstoken.ErrWrongCertificate},
				{"an unknown confirmation method with a certificate", unknown, accesstoken.Presentation{CertThumbprint: mine}, map[bool]error{false: accesstoken.ErrBoundToken, true: nil}[allow]},
			} {
				// Twice: the second answer comes from the cache, when on.
				for round := range 2 {
					c, err := v.Validate(context.Background(), tc.token, tc.p)
					switch {
					case tc.want == nil && err != nil:
						t.Errorf("allow %v, cache %d, %s (round %d): refused: %v", allow, cache, tc.name, round, err)
					case tc.want != nil && !errors.Is(err, tc.want):
						t.Errorf("allow %v, cache %d, %s (round %d): err = %v, want %v", allow, cache, tc.name, round, err, tc.want)
					case tc.want == nil && tc.token == bound && c.X5T != mine:
						t.Errorf("Claims.X5T = %q", c.X5T)
					}
				}
			}
		}
	}
	var ve *accesstoken.ValidationError
	_, err := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k)}).Validate(context.Background(), bound, accesstoken.Presentation{CertThumbprint: other})
	if !errors.As(err, &ve) || ve.Code != "wrong_certificate" || err.Error() != "token is bound to another client certificate" {
		t.Errorf("the refusal = %v", err)
	}
}

// fixed is a validator of one's own that reads no presentation: it
// returns its claims whatever the token and however it came.
type fixed struct{ c *accesstoken.Claims }

func (f fixed) Validate(context.Context, string, accesstoken.Presentation) (*accesstoken.Claims, error) {
	return f.c, nil
}

// TestDecideChecksTheBindingWhateverTheValidator: Decide refuses what a
// presentation proves against the claims, though the validator read none
// of it: a certificate that is not the token's, a DPoP proof for a token
// bound to no DPoP key, a bound token without its proof where DPoP is
// accepted; and a validator's (nil, nil).
func TestDecideChecksTheBindingWhateverTheValidator(t *testing.T) {
	mine, other := "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2", "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg3"
	c, err := accesstoken.NewClaims([]byte(`{"iss":"x","cnf":{"x5t#S256":"` + mine + `"}}`))
	if err != nil || c.X5T != mine {
		t.Fatalf("NewClaims: %+v %v", c, err)
	}
	for _, tc := range []struct {
		name string
		v    accesstoken.TokenValidator
		p    accesstoken.Presentation
		code string // "": admitted
	}{
		{"its certificate", fixed{c}, accesstoken.Presentation{CertThumbprint: mine}, ""},
		{"another certificate", fixed{c}, accesstoken.Presentation{CertThumbprint: other}, "wrong_certificate"},
		{"another certificate where DPoP is accepted", fixed{c}, accesstoken.Presentation{DPoPAccepted: true, CertThumbprint: other}, "wrong_certificate"},
		{"no certificate: the validator's to refuse", fixed{c}, accesstoken.Presentation{}, ""},
		{"no certificate where DPoP is accepted", fixed{c}, accesstoken.Presentation{DPoPAccepted: true}, "bound_token"},
		{"a DPoP proof for a token bound to no DPoP key", fixed{c}, accesstoken.Presentation{DPoP: true, DPoPAccepted: true, CertThumbprint: mine}, "not_bound"},
		{"neither claims nor an error", fixed{nil}, accesstoken.Presentation{}, "no_claims"},
	} {
		got, err := accesstoken.Decide(context.Background(), tc.v, "any", tc.p)
		var ve *accesstoken.ValidationError
		switch {
		case tc.code == "" && (err != nil || got != c):
			t.Errorf("%s: %v, %v", tc.name, got, err)
		case tc.code != "" && (!errors.As(err, &ve) || ve.Code != tc.code || got != nil || accesstoken.ReasonCode(err) != tc.code):
			t.Errorf("%s: %v, %v, want %s", tc.name, got, err, tc.code)
		}
	}
}

// TestNewClaimsReadsCnf: a "cnf" whose x5t#S256 is empty, not a
// string, or given twice is malformed.
func TestNewClaimsReadsCnf(t *testing.T) {
	for _, payload := range []string{`{"cnf":{"x5t#S256":""}}`, `{"cnf":{"x5t#S256":7}}`, `{"cnf":{"x5t#S256":"a","x5t#S256":"b"}}`} {
		if _, err := accesstoken.NewClaims([]byte(payload)); !errors.Is(err, accesstoken.ErrMalformed) {
			t.Errorf("%s: %v, want malformed", payload, err)
		}
	}
}
