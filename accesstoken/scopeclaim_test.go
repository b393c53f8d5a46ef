package accesstoken_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/scope"
)

// TestScpClaimIsReadWhenScopeIsAbsent: without a "scope" claim (or with
// "scope": null, which counts as absent), "scp" is read, as a
// space-delimited string (Microsoft Entra ID) or an array (Hydra, Okta),
// under the rules of "scope": split on U+0020 only, no other whitespace or
// control character in a name, and a value of another JSON type refused.
// With both, "scope" wins and "scp" is not read at all. NewClaims reads
// them the same way.
func TestScpClaimIsReadWhenScopeIsAbsent(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k), CacheSize: -1})
	base := `"iss":"` + iss + `","aud":"` + iss + `/resources","exp":` + strconv.FormatInt(time.Now().Unix()+3600, 10)
	both := scope.Set{scope.AdminWebAPI, scope.ConnectWebAPI}
	cases := []struct {
		name   string
		claims string // beside base
		want   scope.Set
		err    error
	}{
		{"scp array (Hydra, Okta)", `"scp":["pd_AdminWebApi","pd_ConnectWebApi"]`, both, nil},
		{"scp string (Entra ID)", `"scp":"pd_ConnectWebApi pd_AdminWebApi"`, both, nil},
		{"scope null: scp is read", `"scope":null,"scp":["pd_AdminWebApi"]`, scope.Set{scope.AdminWebAPI}, nil},
		{"scp null: no scopes", `"scp":null`, nil, nil},
		{"scope wins over scp", `"scope":"pd_ConnectWebApi","scp":["pd_AdminWebApi"]`, scope.Set{scope.ConnectWebAPI}, nil},
		{"scope wins, scp after it", `"scp":"pd_AdminWebApi","scope":["pd_ConnectWebApi"]`, scope.Set{scope.ConnectWebAPI}, nil},
		{"empty scope wins over scp", `"scope":"","scp":["pd_AdminWebApi"]`, nil, nil},
		{"a broken scp beside scope is not read", `"scope":"pd_AdminWebApi","scp":7`, scope.Set{scope.AdminWebAPI}, nil},
		{"a broken scope beside scp is refused", `"scope":7,"scp":["pd_AdminWebApi"]`, nil, accesstoken.ErrScopeClaim},
		{"SCP is not scp", `"SCP":["pd_AdminWebApi"]`, nil, nil},
		{"scp string split on a tab", `"scp":"pd_ConnectWebApi\tpd_AdminWebApi"`, nil, accesstoken.ErrScopeName},
		{"scp string split on a non-breaking space", `"scp":"pd_ConnectWebApi\u00a0pd_AdminWebApi"`, nil, accesstoken.ErrScopeName},
		{"scp array entry with a space", `"scp":["pd_ConnectWebApi pd_AdminWebApi"]`, nil, accesstoken.ErrScopeName},
		{"scp array entry with a newline", `"scp":["pd_AdminWebApi\n"]`, nil, accesstoken.ErrScopeName},
		{"scp a number", `"scp":1`, nil, accesstoken.ErrScopeClaim},
		{"scp an object", `"scp":{"pd_AdminWebApi":true}`, nil, accesstoken.ErrScopeClaim},
		{"scp array with a number", `"scp":["pd_AdminWebApi",1]`, nil, accesstoken.ErrScopeClaim},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			payload := `{` + base + `,` + c.claims + `}`
			got, err := v.Validate(context.Background(), signPayload(t, k, payload), accesstoken.Presentation{})
			parsed, perr := accesstoken.NewClaims([]byte(payload))
			if c.err != nil {
				if !errors.Is(err, c.err) || got != nil {
					t.Fatalf("Validate: err = %v, want %v", err, c.err)
				}
				if !errors.Is(perr, c.err) {
					t.Fatalf("NewClaims: err = %v, want %v", perr, c.err)
				}
				return
			}
			if err != nil || perr != nil {
				t.Fatalf("Validate: %v; NewClaims: %v", err, perr)
			}
			if !slices.Equal(got.Scopes, c.want) || !slices.Equal(parsed.Scopes, c.want) {
				t.Fatalf("scopes = %v (Validate), %v (NewClaims), want %v", got.Scopes, parsed.Scopes, c.want)
			}
		})
	}
}
