// Package accesstoken decides whether an OAuth 2.0 access token is good:
// a JWT ([RFC 9068]) checked with its issuer's keys, or an opaque
// (reference) token asked about at the issuer's introspection endpoint
// ([RFC 7662]). Decide is the decision every transport makes with a
// TokenValidator (middleware.RequireBearer for HTTP, grpcauth,
// connectauth), and ClaimsFrom reads its claims in a handler.
//
// One Config, one Validator, whatever the issuer:
//
//	v, err := accesstoken.New(ctx, accesstoken.Config{
//		Issuer:   "https://login.example.com/ids",                     // the "iss" accepted
//		Audience: []string{"https://login.example.com/ids/resources"}, // this API, as the issuer writes "aud"
//	})
//	...
//	claims, err := v.Validate(ctx, token, accesstoken.Presentation{}) // claims.ClientID, claims.Scopes, claims.Raw()
//
// The keys are the issuer's, given one way, Config.Keys:
//
//   - nil: the JWKS its discovery document names
//     ({Issuer}/.well-known/openid-configuration), fetched before New
//     returns and kept fresh until ctx ends;
//   - NewJWKS(ctx, JWKSConfig{URL: ...}): a JWKS at a URL, with fetch
//     settings of your own (client, timeout, refresh);
//   - ParseJWKS(jwksJSON): keys given, which never change;
//   - an *issuer.Issuer in the same process, or any KeySource.
//
// Several issuers, as during a move from IdentityServer to this module's
// issuer: Config.Issuers, each with its own audience and keys; a token's
// "iss" chooses one before any key is asked for. Reference tokens:
// Config.Introspection (the endpoint and this API's credentials) beside
// Keys, which keep the JWTs, or alone to introspect every token.
//
// Validate checks, in order: the size, the form, the header ("alg" among
// ES256, RS256, PS256, EdDSA and Ed25519; "typ"), the issuer, the
// signature, and only then the claims ("exp", "nbf" and "iat" with
// leeway, "aud", the binding "cnf" asks for, to a DPoP key or a client
// certificate (RFC 8705): see Presentation, and the scope claim). A
// refusal is a *ValidationError whose Code ("expired",
// "audience", ...) is fixed, for metrics and branching; errors.Is finds
// ErrExpired and the few other Err values a caller acts on. A token seen
// again is answered from a cache, until its key set changes: a JWT of at
// most 4 KiB (a longer one is verified in full each time, since an entry
// keeps its claims), and an introspection answer of at most 1 KiB,
// whatever the token's length (a token over 128 bytes is cached under
// its SHA-256).
//
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
// [RFC 7662]: https://www.rfc-editor.org/rfc/rfc7662
package accesstoken
