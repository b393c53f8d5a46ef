package middleware

import (
	"context"

	"github.com/idsauth/idsauth/accesstoken"
)

// TokenValidator validates a raw access token and returns its claims.
// *Validator is the implementation; RequireBearer takes the interface so
// a service can put its own in front of it.
type TokenValidator interface {
	Validate(ctx context.Context, token string) (*accesstoken.Claims, error)
}
