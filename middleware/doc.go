// Package middleware protects HTTP handlers with the service's
// authentication contract (CONTRACT.md §1 and §4).
//
// A [Validator] checks access tokens: JWTs signed by the identity service,
// verified against its JWKS (found by discovery or given directly) or
// against keys held in the same process. [RequireBearer] reads the token,
// validates it and puts the [Claims] in the request context;
// [RequireScope] then demands a scope. [SCIMAuth] guards SCIM endpoints
// with per-tenant tokens and answers SCIM errors.
//
// Each constructor returns a func(http.Handler) http.Handler, so it drops
// into an alice chain or wraps a handler directly:
//
//	admin := alice.New(middleware.RequireBearer(v), middleware.RequireScope(scope.AdminWebAPI))
//	mux.Handle("GET /webapi/api/v3/{datasourceId}/Admin/Users", admin.ThenFunc(listUsers))
//
// The answers are those of RFC 6750 §3: a request without a token gets a
// bare Bearer challenge and no JSON; a token that fails validation gets
// 401 with error="invalid_token" and a JSON body; a token without the
// route's scope gets 403 insufficient_scope. No token, secret or part of
// one is ever written to a response or a log line.
package middleware
