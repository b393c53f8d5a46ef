// Package bearer reads an OAuth 2.0 bearer token from the Authorization
// header, the one place CONTRACT.md §1 allows it to come from (RFC 6750
// §2.1). Query and form tokens (§2.2, §2.3) are never read.
package bearer

import (
	"net/http"
	"strings"

	"github.com/idsauth/idsauth/internal/reason"
)

var (
	// ErrMissing means no bearer token was sent: no Authorization header,
	// another scheme, or the scheme with nothing after it.
	ErrMissing = reason.New("no_token", "no bearer token")
	// ErrMultipleHeaders means the request carried more than one
	// Authorization header.
	ErrMultipleHeaders = reason.New("multiple_headers", "more than one Authorization header")
	// ErrSpaceInToken means the bearer value had a space inside the token.
	ErrSpaceInToken = reason.New("space_in_token", "bearer token contains a space")
)

// Token returns the bearer token of r's Authorization header. The scheme
// name is matched case-insensitively and may be followed by one or more
// spaces; the token is the rest and must hold no further space.
func Token(r *http.Request) (string, error) {
	tok, _, err := Parse(r, false)
	return tok, err
}

// Parse returns the access token of r's Authorization header, under the
// scheme Bearer or, when dpop is set, DPoP (RFC 9449 §7.1), and whether
// it was DPoP; any other scheme is ErrMissing. The rules are Token's.
func Parse(r *http.Request, dpop bool) (token string, isDPoP bool, _ error) {
	return FromValues(r.Header.Values("Authorization"), dpop)
}

// FromValues is Parse for the values of an Authorization header however
// they came: a gRPC call's "authorization" metadata, a Connect request's
// header. The rules are Token's.
func FromValues(values []string, dpop bool) (token string, isDPoP bool, _ error) {
	switch len(values) {
	case 0:
		return "", false, ErrMissing
	case 1:
	default:
		return "", false, ErrMultipleHeaders
	}
	v := strings.Trim(values[0], " \t")
	scheme := "Bearer"
	if dpop && len(v) >= 4 && strings.EqualFold(v[:4], "DPoP") {
		scheme, isDPoP = "DPoP", true
	}
	if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false, ErrMissing
	}
	rest := v[len(scheme):]
	if rest == "" {
		return "", false, ErrMissing
	}
	if rest[0] != ' ' {
		return "", false, ErrMissing // "Bearerx...": another scheme
	}
	tok := strings.TrimLeft(rest, " ")
	// Two IndexByte calls run vectorized; ContainsAny costs ten times more
	// on a token of a few hundred bytes, on every request.
	if strings.IndexByte(tok, ' ') >= 0 || strings.IndexByte(tok, '\t') >= 0 {
		return "", false, ErrSpaceInToken
	}
	return tok, isDPoP, nil
}
