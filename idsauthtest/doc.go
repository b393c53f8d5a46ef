// Package idsauthtest helps test code that uses idsauth, in the spirit of
// net/http/httptest: a real issuer on a loopback server, tokens good and
// bad in one call each, and contract checkers that run the wire
// contract's cases ([the contract] §1 and §4) against your own handler
// chain and report each case it answers wrongly.
//
//	func TestAdminUsers(t *testing.T) {
//		iss := idsauthtest.NewIssuer(t)
//		h := alice.New(middleware.RequireBearer(iss.Validator()),
//			middleware.RequireScope(scope.AdminWebAPI)).ThenFunc(listUsers)
//		iss.CheckProtected(t, h, "GET /webapi/api/v3/demo/Admin/Users", scope.AdminWebAPI)
//	}
//
// CheckProtectedDPoP and CheckProtectedMTLS add the cases of tokens bound
// to a DPoP key (RFC 9449) and to a client certificate (RFC 8705), whose
// tokens DPoPToken and CertificateBoundToken mint.
//
// Everything here is real: real keys, real signed JWTs, a real issuer
// over real HTTP. It is meant for tests only.
//
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package idsauthtest
