package middleware

import (
	"context"

	"github.com/idsauth/idsauth/accesstoken"
)

// TokenValidator decides whether a raw access token is good and returns
// its claims. *accesstoken.Validator is the implementation; RequireBearer
// takes the interface so that a service can put its own in front of it
// (accesstoken.NewClaims builds the claims of one's own).
type TokenValidator interface {
	Validate(ctx context.Context, token string) (*accesstoken.Claims, error)
}
