// Package issuer is an OAuth 2.0 token issuer for the client_credentials
// grant ([RFC 6749] §4.4), an http.Handler that mounts in any mux: the
// identity service (IdS) of the [contract], §2 and §3. Clients authenticate
// with a secret, a signed JWT (private_key_jwt, [RFC 7523] §2.2) or their
// TLS client certificate ([RFC 8705] §2, Config.MTLS), and may have their
// tokens bound to a DPoP key or to that certificate.
//
//	cfg, err := issuer.LoadConfig("idsauth.json")        // decode, strictly
//	iss, err := issuer.New(cfg, issuer.WithLogger(logger)) // check, read the keys, apply
//	mux.Handle("/ids/", iss)                              // the path of cfg.Issuer
//	err = iss.Reload(cfg2)                                // on SIGHUP; on error nothing changes
//
// It serves the token endpoint ({issuer}/connect/token), introspection
// ([RFC 7662], {issuer}/connect/introspect) and revocation ([RFC 7009],
// {issuer}/connect/revocation), the discovery document and the JWKS.
// Tokens are [RFC 9068] JWT access tokens (typ at+jwt, kid the [RFC 7638]
// thumbprint of the signing key) with iss, sub, client_id, aud, scope,
// iat, nbf, exp and a random jti, or opaque reference tokens for the
// clients configured so; an accesstoken.Validator checks them by the JWKS
// URL or, in the same process, with the Issuer as its key source.
//
// A Config is plain data, read from a JSON file (LoadConfig; the file says
// durations in seconds, Go in time.Duration) or built in code: Validate
// checks it without reading files, New and Reload check it, read the key
// files and apply it. Errors name the field as the file does (ConfigError).
// Keys rotate on a schedule (KeyConfig), so replicas sharing the file switch
// together. Failed authentications are limited per address and per client
// before any secret is checked, without locking a client out of an address
// that has not failed (Config.Limits, a limit.Config).
//
// The configuration file field by field, key rotation and the move from
// IdentityServer: [the identity service guide]. The security model, with
// the test behind each claim: [the security guide].
//
// [RFC 6749]: https://www.rfc-editor.org/rfc/rfc6749
// [RFC 7523]: https://www.rfc-editor.org/rfc/rfc7523
// [RFC 8705]: https://www.rfc-editor.org/rfc/rfc8705
// [RFC 7638]: https://www.rfc-editor.org/rfc/rfc7638
// [RFC 7662]: https://www.rfc-editor.org/rfc/rfc7662
// [RFC 7009]: https://www.rfc-editor.org/rfc/rfc7009
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
// [contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
// [the identity service guide]: https://github.com/idsauth/idsauth/blob/main/docs/IDENTITY-SERVICE.md
// [the security guide]: https://github.com/idsauth/idsauth/blob/main/docs/SECURITY.md
package issuer
