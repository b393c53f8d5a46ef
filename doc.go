// Package idsauth lets a Go web service adopt, and serve, the
// authentication contract of a document-generation and administration
// service: an identity service (IdS) at /ids that issues OAuth 2.0 access
// tokens by the client_credentials grant, and four API families that
// check them ([the contract]).
//
//	API family            path                                      needs
//	Admin API             /webapi/api/v3/{datasourceId}/Admin/...   scope pd_AdminWebApi
//	Connect API           /webapi/api/v3/{datasourceId}/Connect/... scope pd_ConnectWebApi
//	Connect Session API   .../Connect/Session...                    scope pd_ConnectWebApi
//	SCIM 2.0              /webapi/scim-api/v1/{tenant}/scim/...     a per-tenant token
//
// This package holds no code. Start with:
//
//   - accesstoken: decides whether an access token is good, from any
//     issuer: JWTs with the issuer's keys, reference tokens by
//     introspection.
//   - middleware: RequireBearer, RequireScope and SCIMAuth protect routes
//     with it.
//   - issuer: the identity service, an http.Handler to mount at /ids/.
//   - client: an *http.Client that gets, caches and renews tokens.
//   - idsauthtest: a real issuer in tests, and checkers that run the
//     contract's cases against your handlers.
//
// Beside them: scope (the scope names and claim), scimerr (SCIM error
// bodies), secret (hashed secrets), limit (failure limits, for the issuer
// and SCIMAuth alike, and where their budgets live), tokenstore (where
// reference tokens live), observe (events for metrics and logs) and
// metrics (those events as Prometheus counters). Modules of their own keep
// heavier dependencies apart from this one's:
// github.com/idsauth/idsauth/redisstore (the shared stores on Redis, a
// single server or a cluster), .../idsauthotel (OpenTelemetry),
// .../grpcauth and .../connectauth (the same contract for gRPC and Connect
// services), .../mcpauth (for MCP servers and clients of either Go SDK).
// The command cmd/idsauth is the operator's tool; "go run
// ./examplesvc" runs the reference service. The [README] walks through
// each in a few minutes.
//
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
// [README]: https://github.com/idsauth/idsauth#readme
package idsauth
