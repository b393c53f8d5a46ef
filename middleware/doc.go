// Package middleware protects HTTP handlers with the service's
// authentication contract ([the contract] §1 and §4).
//
// A [Validator] checks access tokens ([RFC 9068]): JWTs signed by the
// identity service, verified against its JWKS (found by discovery or given
// directly) or against a [KeySource] in the same process, such as a
// mounted *issuer.Issuer. [RequireBearer] reads the token, validates it
// and puts the [Claims] in the request context; [RequireScope] (or
// [RequireFamily]) then demands a scope. [SCIMAuth] guards SCIM endpoints
// with per-tenant tokens and answers SCIM errors.
//
// A Validator trusts one issuer, or several ([ValidatorConfig.Issuers]):
// during a move from the product's IdentityServer to this module's
// issuer, tokens of both are live, each checked with the keys of the
// issuer its "iss" names. An [Introspector] checks opaque reference
// tokens at an RFC 7662 endpoint; [JWTOrReference] takes both kinds on
// one route. [BearerConfig.DPoP] takes DPoP-bound tokens with their
// proofs ([RFC 9449]), and [ResourceMetadata] tells clients how to call
// ([RFC 9728]).
//
// Each constructor returns a func(http.Handler) http.Handler, so it drops
// into an alice chain or wraps a handler directly:
//
//	admin := alice.New(middleware.RequireBearer(v), middleware.RequireScope(scope.AdminWebAPI))
//	mux.Handle("GET /webapi/api/v3/{datasourceId}/Admin/Users", admin.ThenFunc(listUsers))
//
// Settings follow one style: the common case takes none
// (RequireBearer(v), SCIMAuth(tenants)), and a Config struct whose zero
// value is that common case holds the rest (RequireBearerWithConfig and
// [BearerConfig], SCIMAuthWithConfig and [SCIMConfig], NewValidator and
// [ValidatorConfig]). A setting belongs to the one thing it configures, so
// a setting that cannot apply does not compile, and a misconfiguration
// that only shows at run time panics at construction.
//
// Logging: each Config has a Logger for what its owner does, nil logging
// nothing. BearerConfig.Logger and SCIMConfig.Logger get the rejections;
// ValidatorConfig.Logger gets the failures of its background JWKS
// refresh. RequireScope logs through the RequireBearer before it.
//
// The answers are those of [RFC 6750] §3: a request without a token gets
// a bare Bearer challenge and no JSON; a token that fails validation gets
// 401 with error="invalid_token" and a JSON body; a token without the
// route's scope gets 403 insufficient_scope. No token, secret or part of
// one is ever written to a response or a log line.
//
// [RFC 6750]: https://www.rfc-editor.org/rfc/rfc6750
// [RFC 9449]: https://www.rfc-editor.org/rfc/rfc9449
// [RFC 9728]: https://www.rfc-editor.org/rfc/rfc9728
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package middleware
