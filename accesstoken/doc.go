// Package accesstoken decides whether an access token is good: a JWT
// ([RFC 9068]) checked against its issuer's keys, or an opaque reference
// token asked about at the issuer's introspection endpoint ([RFC 7662]).
// Package middleware answers HTTP with it.
//
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
// [RFC 7662]: https://www.rfc-editor.org/rfc/rfc7662
package accesstoken
