package connectauth

import (
	"context"
	"errors"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// tokens adapts the token-checking package to the shared decision
// (internal/rpcauth): the one file of this module, with the Config's
// Validator field, that names it.
type tokens struct{ v middleware.TokenValidator }

func (t tokens) Validate(ctx context.Context, token string) (context.Context, scope.Set, error) {
	ctx, scopes, _, err := t.ValidateExpiring(ctx, token)
	return ctx, scopes, err
}

// ValidateExpiring is Validate, and the token's expiry, at which a
// stream admitted with it ends.
func (t tokens) ValidateExpiring(ctx context.Context, token string) (context.Context, scope.Set, time.Time, error) {
	cert := peerCertificate(ctx)
	if cert != "" {
		ctx = accesstoken.Presentation{CertThumbprint: cert}.NewContext(ctx)
	}
	claims, err := t.v.Validate(ctx, token)
	if err == nil && claims == nil {
		err = errNoClaims // fail closed on a validator's bug
	}
	if err == nil && cert != "" && claims.X5T != "" {
		// A certificate must be the token's whatever the validator (one
		// of your own may read no presentation), as on an HTTP route.
		err = accesstoken.Presentation{CertThumbprint: cert}.Check(claims)
	}
	if err != nil {
		return ctx, nil, time.Time{}, err
	}
	return middleware.ContextWithClaims(ctx, claims), claims.Scopes, claims.ExpiresAt, nil
}

func (tokens) Reason(err error) string {
	if errors.Is(err, errNoClaims) {
		return "no_claims" // as middleware.ReasonCode names it on an HTTP route
	}
	return middleware.ReasonCode(err)
}

// errNoClaims: the Validator returned neither claims nor an error, a bug
// in that validator; the call is refused, never admitted.
var errNoClaims = errors.New("token validator returned no claims and no error")

// realm is the realm of the challenges, the HTTP side's default.
const realm = "idsauth" // middleware.BearerConfig.Realm's default
