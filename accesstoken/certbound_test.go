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
	with := func(p accesstoken.Presentation) context.Context { return p.NewContext(context.Background()) }
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
					c, err := v.Validate(with(tc.p), tc.token)
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
	_, err := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k)}).Validate(with(accesstoken.Presentation{CertThumbprint: other}), bound)
	if !errors.As(err, &ve) || ve.Code != "wrong_certificate" || err.Error() != "token is bound to another client certificate" {
		t.Errorf("the refusal = %v", err)
	}
}

// TestPresentationCheckCertificate: Check, the rule whatever the
// validator, refuses a certificate-bound token without its certificate.
func TestPresentationCheckCertificate(t *testing.T) {
	c, err := accesstoken.NewClaims([]byte(`{"iss":"x","cnf":{"x5t#S256":"bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}}`))
	if err != nil || c.X5T != "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2" {
		t.Fatalf("NewClaims: %+v %v", c, err)
	}
	for _, tc := range []struct {
		p    accesstoken.Presentation
		code string
	}{
		{accesstoken.Presentation{}, "bound_token"},
		{accesstoken.Presentation{CertThumbprint: "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg3"}, "wrong_certificate"},
		{accesstoken.Presentation{CertThumbprint: "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}, ""},
	} {
		err := tc.p.Check(c)
		var ve *accesstoken.ValidationError
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%+v: %v", tc.p, err)
		case tc.code != "" && (!errors.As(err, &ve) || ve.Code != tc.code):
			t.Errorf("%+v: %v, want %s", tc.p, err, tc.code)
		}
	}
	for _, payload := range []string{`{"cnf":{"x5t#S256":""}}`, `{"cnf":{"x5t#S256":7}}`, `{"cnf":{"x5t#S256":"a","x5t#S256":"b"}}`} {
		if _, err := accesstoken.NewClaims([]byte(payload)); !errors.Is(err, accesstoken.ErrMalformed) {
			t.Errorf("%s: %v, want malformed", payload, err)
		}
	}
}
