package middleware

import (
	"context"
	"strings"

	"github.com/idsauth/idsauth/accesstoken"
)

// TokenValidator validates a raw access token and returns its claims.
// *Validator is the implementation; RequireBearer takes the interface so
// a service can put its own in front of it.
type TokenValidator interface {
	Validate(ctx context.Context, token string) (*accesstoken.Claims, error)
}

// JWTOrReference returns a TokenValidator that accepts both kinds of
// token on one route, as IdentityServer's ForwardDefaultSelector pattern
// does in ASP.NET: a token shaped like a JWT (three dot-separated parts)
// goes to jwt, any other to reference (an Introspector). Both fill Claims
// the same way from what the issuer says of the token (a JWT's claims,
// an introspection answer's members) and refuse with the same 401
// answers. It panics when either is nil.
func JWTOrReference(jwt, reference TokenValidator) TokenValidator {
	if jwt == nil || reference == nil {
		panic("middleware: JWTOrReference: a nil TokenValidator")
	}
	return shapeRouter{jwt: jwt, reference: reference}
}

type shapeRouter struct{ jwt, reference TokenValidator }

func (r shapeRouter) Validate(ctx context.Context, token string) (*accesstoken.Claims, error) {
	if strings.Count(token, ".") == 2 {
		return r.jwt.Validate(ctx, token)
	}
	return r.reference.Validate(ctx, token)
}
