package accesstoken_test

import (
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
)

// TestClientIDFromAzp: an access token without client_id names its
// client in azp (Keycloak, Auth0, Microsoft Entra v2); client_id wins
// where both are given.
func TestClientIDFromAzp(t *testing.T) {
	for _, tc := range []struct{ payload, want string }{
		{`{"azp":"reporting"}`, "reporting"},
		{`{"client_id":"reporting","azp":"other"}`, "reporting"},
		{`{"azp":7}`, ""},
	} {
		c, err := accesstoken.NewClaims([]byte(tc.payload))
		if err != nil || c.ClientID != tc.want {
			t.Errorf("%s: ClientID %q, %v; want %q", tc.payload, c.ClientID, err, tc.want)
		}
	}
}
