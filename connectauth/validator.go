package connectauth

import (
	"context"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/scope"
)

// tokens is accesstoken's decision as internal/rpcauth takes it: a
// call's token, presented with the certificate ClientCertificate found,
// in; the claims in the handler's context, out.
type tokens struct{ v accesstoken.TokenValidator }

func (t tokens) Validate(ctx context.Context, token string) (context.Context, scope.Set, time.Time, error) {
	p := accesstoken.Presentation{CertThumbprint: peerCertificate(ctx)}
	c, err := accesstoken.Decide(ctx, t.v, token, p)
	if err != nil {
		return ctx, nil, time.Time{}, err
	}
	return accesstoken.ContextWithClaims(ctx, c), c.Scopes, c.ExpiresAt, nil
}

func (tokens) Reason(err error) string { return accesstoken.ReasonCode(err) }

// realm is the realm of the challenges, the HTTP side's default.
const realm = "idsauth" // middleware.BearerConfig.Realm's default
