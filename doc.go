// Package idsauth lets a Go web service adopt, and serve, the
// authentication contract of a document-generation and administration
// service: an identity service (IdS) at /ids that issues OAuth 2.0 access
// tokens by the client_credentials grant, and four API families that
// check them.
//
//	API family            path                                      needs
//	Admin API             /webapi/api/v3/{datasourceId}/Admin/...   scope pd_AdminWebApi
//	Connect API           /webapi/api/v3/{datasourceId}/Connect/... scope pd_ConnectWebApi
//	Connect Session API   .../Connect/Session...                    scope pd_ConnectWebApi
//	SCIM 2.0              /webapi/scim-api/v1/{tenant}/scim/...     a per-tenant token
//
// The packages:
//
//   - scope: the two scope names, the API family each grants, and parsing
//     of the scope claim.
//   - middleware: RequireBearer, RequireScope (or RequireFamily) and SCIMAuth, each a
//     func(http.Handler) http.Handler, on a Validator that checks JWTs
//     against the issuer's JWKS (or its keys in process).
//   - issuer: the token issuer, an http.Handler to mount at /ids/, with its
//     configuration file, JWKS, discovery and key rotation on a schedule
//     from the file (or by reload); clients authenticate with a secret or
//     a signed JWT (private_key_jwt).
//   - scimerr: SCIM error bodies ([RFC 7644] §3.12).
//   - secret: hashed client secrets and SCIM tokens.
//   - client: the calling side, an *http.Client that gets (with a secret
//     or a key), caches and renews tokens and retries once on invalid_token.
//   - idsauthtest: test helpers: a real issuer on httptest, good and bad
//     tokens in one call each, and checkers that run the contract's cases
//     against your own handlers.
//   - limit: where the issuer and SCIMAuth keep failed-attempt budgets:
//     in memory by default, or a shared Store (the module
//     github.com/idsauth/idsauth/redisstore) for several replicas.
//   - observe: the events of all of the above (validations, rejections,
//     JWKS fetches, token requests, SCIM authentications) for an Observer
//     of yours; the module idsauthotel records them as OpenTelemetry
//     metrics and spans, apart from this module's dependencies.
//
// The command cmd/idsauth is the operator's tool: hash-secret, gen-key,
// check-config, token and decode.
//
// The command examplesvc wires all of it; "go run ./examplesvc" starts it.
// A service that validates tokens from an identity service elsewhere needs
// only this:
//
//	v, err := middleware.NewValidator(ctx, middleware.ValidatorConfig{
//		Issuer:   "https://host/ids",
//		Audience: []string{"https://host/ids/resources"}, // what the issuer puts in "aud"
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	admin := alice.New(middleware.RequireBearer(v), middleware.RequireScope(scope.AdminWebAPI))
//	mux.Handle("GET /webapi/api/v3/{datasourceId}/Admin/Users", admin.ThenFunc(listUsers))
//
// CONTRACT.md settles every status, header and body; each package's
// documentation names the section it implements.
//
// [RFC 7644]: https://www.rfc-editor.org/rfc/rfc7644
package idsauth
