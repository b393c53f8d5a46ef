package middleware

import (
	"testing"

	"github.com/idsauth/idsauth/accesstoken"

	"github.com/idsauth/idsauth/internal/oauthwire"
)

// TestDocumentedValues: the values that go doc shows as literals or in
// comments, because the declarations refer to internal packages, are the
// ones in force.
func TestDocumentedValues(t *testing.T) {
	if DefaultRealm != oauthwire.Realm {
		t.Errorf("DefaultRealm = %q, but the module's challenges use %q", DefaultRealm, oauthwire.Realm)
	}
	for err, want := range map[error]string{
		ErrNoToken:                     "no bearer token",
		ErrMultipleHeaders:             "more than one Authorization header",
		ErrSpaceInToken:                "bearer token contains a space",
		accesstoken.ErrAlgorithm:       "token signing algorithm not allowed",
		accesstoken.ErrUnknownKey:      "unknown signing key",
		accesstoken.ErrKeysUnavailable: "signing keys unavailable",
		accesstoken.ErrScopeClaim:      "scope claim is neither a string nor an array of strings",
	} {
		if err.Error() != want {
			t.Errorf("an error documented as %q says %q", want, err.Error())
		}
	}
}
