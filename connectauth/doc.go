// Package connectauth protects Connect handlers with idsauth's contract
// ([the contract] §1 and its Connect table), and makes a Connect client
// send the client's tokens: the same validators, scopes and refusals as
// grpcauth, as a connect.Interceptor.
//
// The handler side checks every call, unary and streaming, before the
// handler runs: the token comes from the Authorization header (the Bearer
// scheme, one header, no space inside the token), the procedure's scopes
// from a table of procedure names with a default; a procedure the table
// names nowhere is refused (fail closed). The validated claims are in the
// handler's context, read by accesstoken.ClaimsFrom, as on an HTTP
// route. A stream ends at its token's expiry,
// CodeUnauthenticated "invalid_token: expired".
//
//	auth, err := connectauth.New(connectauth.Config{
//		Validator:     v, // a *accesstoken.Validator
//		DefaultScopes: []string{scope.AdminWebAPI},
//	})
//	mux.Handle(greetv1connect.NewGreetServiceHandler(svc, connect.WithInterceptors(auth)))
//
// The answers, with Connect's codes: no token, CodeUnauthenticated "no
// bearer token"; a token that fails validation, CodeUnauthenticated
// "invalid_token: <reason>"; two Authorization headers or a space inside
// the token, CodeInvalidArgument "invalid_request: <reason>"; a token
// without the scope, CodePermissionDenied "insufficient_scope: <scopes>".
// Each carries its reason as a google.rpc.ErrorInfo detail; over the
// Connect protocol and gRPC-Web, also the RFC 6750 WWW-Authenticate
// challenge and Cache-Control: no-store in its metadata, which the
// Connect protocol sends as headers of its 401, 400 or 403 (not over
// gRPC, whose trailers cannot carry them). No message holds any part of a
// token.
//
// The client side is ClientInterceptor: it adds the client's token to
// the calls to the service's origins, sent by the HTTP client its
// HTTPClient method returns (which sees each request's scheme, host and
// port), and retries a call once with a new token when the handler
// answers "invalid_token", as client.Config.Client does for HTTP.
//
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package connectauth
