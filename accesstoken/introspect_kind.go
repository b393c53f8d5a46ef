package accesstoken

import (
	"strings"

	"github.com/idsauth/idsauth/internal/jws"
)

// An introspection endpoint answers about any token its server issued,
// refresh tokens included, often whatever token_type_hint says: ORY
// Hydra calls a refresh token active, with the access token's aud, when
// asked with token_type_hint=access_token. An active answer that says it
// describes another kind of token is refused ("type"), in each way the
// servers say it:
//
//   - "token_use", ORY Hydra's (fosite's): "access_token" or
//     "refresh_token". Anything but "access_token" is refused.
//   - "token_type", where it names a token kind rather than a scheme
//     ("Bearer", "DPoP"): Duende IdentityServer says "access_token" or
//     "refresh_token", panva's oidc-provider before v4 "access_token",
//     "client_credentials" or "refresh_token", and RFC 8693 names the
//     kinds "urn:ietf:params:oauth:token-type:refresh_token" and so on.
//     A refresh or ID token's name is refused.
//   - "typ", Keycloak's, which introspection copies from the token's
//     claims: "Bearer" (or "DPoP") for an access token, "Refresh",
//     "Offline", "ID", "Logout" or "Serialized-ID" for the others, which
//     are refused.
//
// A member of the wrong JSON type is refused too. Where a server's
// answer does not say (see Introspection on Config.Audience), nothing here
// can tell.
var notAccessTokens = map[string][]string{
	"token_use": nil, // anything but access_token
	"token_type": {
		"refresh_token", "urn:ietf:params:oauth:token-type:refresh_token",
		"id_token", "urn:ietf:params:oauth:token-type:id_token",
	},
	"typ": {"refresh", "offline", "id", "logout", "serialized-id"},
}

// describesAccessToken reports whether an active introspection answer
// raw may be about an access token: none of its members says it is
// about another kind of token.
func describesAccessToken(raw jws.Claims) bool {
	for member, others := range notAccessTokens {
		kind, ok, err := raw.String(member)
		switch {
		case err != nil:
			return false
		case !ok:
			continue
		}
		if others == nil { // token_use: it names the kind outright
			if kind != "access_token" {
				return false
			}
			continue
		}
		for _, o := range others {
			if strings.EqualFold(kind, o) {
				return false
			}
		}
	}
	return true
}
