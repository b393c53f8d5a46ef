package middleware

import (
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
)

// TestDocumentedValues: the values that go doc shows as literals or in
// comments, because the declarations refer to internal packages, are the
// ones in force.
func TestDocumentedValues(t *testing.T) {
	if defaultResponder.realm != "idsauth" {
		t.Errorf("the realm of RequireBearer without one is %q, documented as \"idsauth\"", defaultResponder.realm)
	}
	for err, want := range map[error]string{
		errNoToken:                     "no bearer token",
		errMultipleHeaders:             "more than one Authorization header",
		errSpaceInToken:                "bearer token contains a space",
		accesstoken.ErrUnknownKey:      "unknown signing key",
		accesstoken.ErrKeysUnavailable: "signing keys unavailable",
	} {
		if err.Error() != want {
			t.Errorf("an error documented as %q says %q", want, err.Error())
		}
	}
}
