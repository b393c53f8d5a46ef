// Package grpcauth protects a gRPC server's methods with idsauth's
// contract ([the contract] §1 and its gRPC table), and makes a gRPC
// client send the client's tokens.
//
// The server side is two interceptors, unary and streaming: the token
// comes from the "authorization" metadata (the Bearer scheme, one value,
// no space inside the token), is checked by the same validators as an
// HTTP route (an *accesstoken.Validator), and
// the method's scopes come from a table of full method names with a
// default; a method the table names nowhere is refused (fail closed).
// The validated claims are in the handler's context, read by
// accesstoken.ClaimsFrom, as on an HTTP route. A stream ends at its token's
// expiry, Unauthenticated "invalid_token: expired".
//
//	auth, err := grpcauth.New(grpcauth.Config{
//		Validator: v, // a *accesstoken.Validator
//		Scopes: map[string][]string{
//			"/grpc.testing.TestService/": {scope.AdminWebAPI},
//		},
//		PublicHealth: true, PublicReflection: true,
//	})
//	srv := grpc.NewServer(auth.ServerOptions()...)
//
// The answers: no token, codes.Unauthenticated "no bearer token"; a token
// that fails validation, codes.Unauthenticated "invalid_token: <reason>"
// (the reason a fixed code, such as "expired"); two authorization values
// or a space inside the token, codes.InvalidArgument "invalid_request:
// <reason>"; a token without the method's scope, codes.PermissionDenied
// "insufficient_scope: <scopes>". Each status carries its reason as a
// google.rpc.ErrorInfo detail (docs/GRPC.md). No message holds any part
// of a token.
//
// The client side is Credentials: per-call credentials
// (credentials.PerRPCCredentials) from a client.Config, sent only over a
// connection with transport security (or to a loopback target the caller
// names), and interceptors that retry a call once with a new token when
// the server answers "invalid_token", as client.Config.Client does for
// HTTP.
//
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package grpcauth
