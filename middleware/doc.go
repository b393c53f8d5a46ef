// Package middleware protects HTTP handlers with the service's
// authentication contract ([the contract] §1 and §4): it answers HTTP,
// and leaves deciding whether a token is good to package accesstoken.
//
// [RequireBearer] reads the token of the Authorization header and how it
// was presented, has [accesstoken.Decide] decide it with an
// [accesstoken.TokenValidator] (an *accesstoken.Validator: JWTs checked
// with their issuer's keys, reference tokens introspected, one issuer or
// several), and puts the claims in the request context
// ([accesstoken.ClaimsFrom]);
// [RequireScope] (or [RequireFamily]) then demands a scope. [SCIMAuth]
// guards SCIM endpoints with per-tenant tokens and answers SCIM errors.
// [BearerConfig.DPoP] takes DPoP-bound tokens with their proofs
// ([RFC 9449]); a token bound to a client certificate ([RFC 8705]) is
// taken with that certificate, the TLS connection's or, behind a proxy,
// the one it forwards ([ForwardedCert]); and [ResourceMetadata] tells
// clients how to call ([RFC 9728]).
//
// Each constructor returns a func(http.Handler) http.Handler, so it drops
// into an alice chain or wraps a handler directly:
//
//	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: issuerURL, Audience: []string{issuerURL + "/resources"}})
//	admin := alice.New(middleware.RequireBearer(v), middleware.RequireScope(scope.AdminWebAPI))
//	mux.Handle("GET /webapi/api/v3/{datasourceId}/Admin/Users", admin.ThenFunc(listUsers))
//
// Settings follow one style: the common case takes none
// (RequireBearer(v), SCIMAuth(tenants)), and a Config struct whose zero
// value is that common case holds the rest (RequireBearerWithConfig and
// [BearerConfig], SCIMAuthWithConfig and [SCIMConfig]). A setting belongs
// to the one thing it configures, so a setting that cannot apply does not
// compile, and a misconfiguration that only shows at run time panics at
// construction.
//
// Logging: BearerConfig.Logger and SCIMConfig.Logger get the rejections,
// nil logging nothing; RequireScope logs through the RequireBearer before
// it. Every rejection has a fixed code ([accesstoken.ReasonCode]), which
// the reject hook and the observer get.
//
// The answers are those of [RFC 6750] §3: a request without a token gets
// a bare Bearer challenge and no JSON; a token that fails validation gets
// 401 with error="invalid_token" and a JSON body whose error_description
// is the fixed text of its code; a token without the route's scope gets
// 403 insufficient_scope. No token, secret or part of one is ever written
// to a response or a log line.
//
// [RFC 6750]: https://www.rfc-editor.org/rfc/rfc6750
// [RFC 8705]: https://www.rfc-editor.org/rfc/rfc8705
// [RFC 9449]: https://www.rfc-editor.org/rfc/rfc9449
// [RFC 9728]: https://www.rfc-editor.org/rfc/rfc9728
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package middleware
