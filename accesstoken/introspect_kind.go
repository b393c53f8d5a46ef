package accesstoken

import (
	"slices"
	"strings"

	"github.com/idsauth/idsauth/internal/jws"
)

// An introspection endpoint answers about any token its server issued,
// refresh tokens included. An active answer is taken for an access
// token's only if each member that names a token's kind names an access
// token; any other, or a member that is not a string, is refused ("type"):
// "token_use" (ORY Hydra's) must be "access_token", "token_type" one of
// accessTokenTypes (an allow-list), and Keycloak's "typ" none of
// otherKinds (a deny-list). Names are compared without regard to case,
// "_" or "-". Which server writes what, and why an allow-list here and a
// deny-list there: docs/RESOURCE-SERVER.md, "Refresh tokens are refused".
var accessTokenTypes = names("Bearer", "DPoP", "PoP",
	"access_token", "urn:ietf:params:oauth:token-type:access_token", "client_credentials", "access")

// otherKinds are the names of tokens that are not access tokens, in any
// member: refresh, ID and logout tokens as Keycloak, IdentityServer and
// RFC 8693 name them, and RFC 8693's "N_A", which says the token is not
// an access token.
var otherKinds = names(
	"refresh", "refresh_token", "urn:ietf:params:oauth:token-type:refresh_token", "offline", "offline_token",
	"id", "id_token", "urn:ietf:params:oauth:token-type:id_token", "logout", "logout_token", "serialized-id", "N_A")

// names returns ns as kindName compares them.
func names(ns ...string) []string {
	for i, n := range ns {
		ns[i] = kindName(n)
	}
	return ns
}

// kindName is s as kind names are compared: lower case, without "_" or
// "-".
func kindName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '_' || r == '-':
			return -1
		case 'A' <= r && r <= 'Z':
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// describesAccessToken reports whether an active introspection answer
// raw may be about an access token (see accessTokenTypes). When it may
// not because its "token_type" is a name neither of an access token nor
// of another kind, unknown is that name, for the log: a server whose
// access tokens say so is refused until the name is known here.
func describesAccessToken(raw jws.Claims) (ok bool, unknown string) {
	use, present, err := raw.String("token_use")
	if err != nil || present && use != "access_token" {
		return false, ""
	}
	typ, present, err := raw.String("typ")
	if err != nil || present && slices.Contains(otherKinds, kindName(typ)) {
		return false, ""
	}
	kind, present, err := raw.String("token_type")
	switch {
	case err != nil:
		return false, ""
	case !present || slices.Contains(accessTokenTypes, kindName(kind)):
		return true, ""
	case slices.Contains(otherKinds, kindName(kind)):
		return false, ""
	}
	return false, kind
}
