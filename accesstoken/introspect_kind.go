package accesstoken

import (
	"slices"
	"strings"

	"github.com/idsauth/idsauth/internal/jws"
)

// An introspection endpoint answers about any token its server issued,
// refresh tokens included, often whatever token_type_hint says: ORY
// Hydra calls a refresh token active, with the access token's aud, when
// asked with token_type_hint=access_token. An active answer is taken for
// an access token's only if each member that names a token's kind names
// an access token; any other, or a member that is not a string, is
// refused ("type"):
//
//   - "token_use", ORY Hydra's (fosite's): "access_token" or
//     "refresh_token". Only "access_token" is taken.
//   - "token_type": RFC 7662 makes it the access token's type of RFC 6749
//     §5.1, a scheme: "Bearer", "DPoP", RFC 9200's "PoP". Servers that
//     name a kind there instead write, for an access token,
//     "access_token" (Duende IdentityServer; panva's oidc-provider
//     before v4, which also says "client_credentials"), RFC 8693's
//     "urn:ietf:params:oauth:token-type:access_token", or "access" (a
//     server that copies its own JWT's claim, as djangorestframework-
//     simplejwt writes it). These alone are taken: an allow-list.
//   - "typ", Keycloak's, which introspection copies from the token's
//     claims: "Bearer" (or "DPoP") for an access token, "Refresh",
//     "Offline", "ID", "Logout" or "Serialized-ID" for the others. Any
//     name in otherKinds is refused: a deny-list.
//
// Why an allow-list for token_type: the names of a refresh token are many
// and grow ("refresh_token", "Refresh", "refresh", "offline", the URN),
// and one a deny-list misses is a refresh token taken, silently, for the
// weeks it lives; the names of an access token in that member are few,
// and one an allow-list misses refuses every token of that server at
// once, in plain view: the log names the value (see call). typ is no
// standard's member, and a JWT's own typ ("at+jwt", "JWT") may be copied
// into it, so there a deny-list, the one list of the other kinds' names,
// risks no such refusal. Names are compared without regard to case, "_"
// or "-" ("Refresh-Token" is refresh_token), as servers spell them.
//
// Where a server's answer does not say (see Introspection on
// Config.Audience), nothing here can tell.
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
