// Package issuer is an OAuth 2.0 token issuer for the client_credentials
// grant ([RFC 6749] §4.4), with clients authenticated by a secret or a
// signed JWT, that mounts in any http.ServeMux: the identity service (IdS)
// of the contract, CONTRACT.md §2 and §3.
//
//	cfg, err := issuer.LoadConfig("idsauth.json")        // decode
//	iss, err := issuer.New(cfg, issuer.WithLogger(logger)) // check, read keys
//	mux.Handle("/ids/", iss) // the path comes from cfg.Issuer
//
// Tokens are [RFC 9068] JWT access tokens (typ "at+jwt", kid the [RFC 7638]
// thumbprint of the signing key) with iss, sub, client_id, aud, scope,
// iat, nbf, exp and a jti of 130 random bits (crypto/rand.Text). A
// middleware.Validator checks them, by the JWKS URL or, in the same
// process, with the Issuer as its KeySource.
//
// # Loading, checking, applying
//
// LoadConfig, ParseConfig and DecodeConfig decode a file strictly and
// check nothing else. Config.Validate checks the fields; it reads no file
// and changes nothing. New and Reload check the same way, then read the
// key files (the only place they are read) and apply the result at once;
// on error nothing changes. The logger and clock are New's options and
// hold for the issuer's life.
//
// # Key rotation on a schedule
//
// Keys with publishAt, signAt and retireAt rotate at those instants of
// the issuer's clock, without a reload, so that replicas sharing one file
// switch together: a key is published from publishAt until retireAt, and
// of the published keys whose signAt has come, the one with the latest
// signAt signs (a tie, as between keys without times, goes to the first
// listed). KeyConfig gives the rules, and the schedules that are refused:
// a key signing before validators can have fetched it
// (validatorRefreshSeconds + jwksMaxAgeSeconds after publishAt), a key
// retiring while its tokens can be live (the longest accessTokenLifetime
// after it stops signing), an instant with no key to sign. The JWKS, the
// keys a validator in the same process gets and KeysVersion change at
// the instants; KeySchedule reports the schedule.
//
// # Configuration file
//
// A JSON object; unknown fields are errors, and so is any bad value: the
// error names the field (see ConfigError) and nothing of a bad file is
// applied. A complete example is testdata/example-config.json.
//
//	issuer               the issuer URL, e.g. "https://host/ids" (required)
//	keys                 signing keys; without times the first signs and all
//	                     are published; required unless ephemeralKey
//	  [].file            PEM private key file (PKCS #8, SEC 1 or PKCS #1),
//	                     relative to the configuration file's folder
//	  [].alg             "ES256" (P-256), "RS256" (RSA ≥ 2048 bits) or "EdDSA"
//	                     (Ed25519); empty: the one that fits the key
//	  [].publishAt       RFC 3339 time it enters the JWKS; default since ever
//	  [].signAt          RFC 3339 time it may sign from; default as soon as
//	                     published, after the keys with a signAt
//	  [].retireAt        RFC 3339 time it leaves the JWKS; default never
//	ephemeralKey         true, with no keys: an ES256 key made at start that
//	                     dies with the process; development only
//	clients              registered clients
//	  [].clientId        required, unique
//	  [].secretHashes    hashes ("sha256:<base64>", "sha512:...", "bcrypt:...";
//	                     see package secret); never plain text; one or more,
//	                     unless publicKeys
//	  [].publicKeys      keys for private_key_jwt, at most 8:
//	    [].file          PEM public key ("PUBLIC KEY"), relative to the file
//	    [].jwk           or a public JWK: EC P-256, RSA ≥ 2048 bits, OKP Ed25519
//	    [].alg           ES256, RS256, PS256 or EdDSA; empty: the JWK's, else
//	                     the key's (RS256 for RSA)
//	  [].scopeWhenOmitted  "refuse" or "all"; default the global one
//	  [].grantTypes      default ["client_credentials"]
//	  [].scopes          scopes the client may ask for: pd_AdminWebApi,
//	                     pd_ConnectWebApi
//	  [].accessTokenLifetime  seconds, default 3600
//	  [].audience        "aud" of its tokens, default ["{issuer}/resources"];
//	                     resource parameters (RFC 8707) choose among them
//	scopeWhenOmitted     what a request without scope gets: "refuse" (default,
//	                     invalid_scope) or "all" (IdentityServer's behaviour)
//	clientAssertions
//	  .maxLifetimeSeconds  how far ahead an assertion's exp may be, default 300
//	  .replayCacheBytes    memory of used jtis, default 262144
//	scopeFormat          "string" (default) or "array" (IdentityServer's form)
//	jwksMaxAgeSeconds    Cache-Control max-age of JWKS and discovery, default 300
//	validatorRefreshSeconds  how often validators refetch the JWKS, default
//	                     300; with jwksMaxAgeSeconds, how long before its
//	                     signAt a key must be published
//	limits
//	  .maxBodyBytes              token request body bound, default 16384
//	  .failedAttemptsPerClient   failures per client ID in the window, default 10
//	  .failedAttemptsPerAddress  failures per remote address, default 100
//	  .failureWindowSeconds      default 60
//	  .limiterMaxBytes           the failure limiter's memory, default 1 MiB
//	  .failureFloorMillis        least time of a failure answer; default
//	                             automatic, -1 none
//	  .maxConcurrentSlowHashes   bcrypt checks at once, default half the CPUs
//	  .trustedProxyHeader        e.g. "X-Forwarded-For"; only behind a proxy
//	  .trustedProxies            CIDRs of the proxies whose entries count
//
// With ephemeralKey the issuer logs a warning each time it applies the
// configuration: its tokens stop validating when the process ends. A
// service that keeps more in the same file (SCIM tenants, say: see
// middleware.ParseTenants) decodes a type of its own that embeds Config,
// with DecodeConfig.
//
// # Secrets
//
// secret.Generate makes a random secret and its hash; the idsauth command
// prints one with "idsauth hash-secret". Every check is
// constant-time, and an unknown client, a wrong secret and a client with
// several or slow hashes answer alike (see secret.Verifier). Failed
// authentications are limited before the secret is checked, per address
// and per client ID, without ever locking a client out of an address that
// has not failed: see Limits for exactly what an attacker can do.
//
// # Keys instead of secrets
//
// A client with publicKeys authenticates with private_key_jwt ([RFC 7523]
// §2.2, OpenID Connect Core §9): client_assertion_type
// ClientAssertionType and a client_assertion it signed. The assertion is
// at most MaxAssertionLength bytes; it is reserved from the failure
// budgets like a secret; its signature is checked first, against each key
// of the client for its alg (padded to the most keys any client has, with
// keys nobody holds, so that an unknown client costs the same); then iss
// and sub must be the client ID, aud must name the token endpoint or the
// issuer, exp must be present and at most clientAssertions.maxLifetimeSeconds
// ahead, nbf and iat not in the future (30 s of leeway), and the jti new.
// Used jtis are remembered until they expire in a table of fixed bytes
// that only valid assertions add to, kept across reloads; when it is full
// the request gets 429 slow_down rather than a live jti being forgotten.
// Every failure is a wrong secret's answer, with its floor. A request
// with a secret and an assertion is 400 invalid_request. There is no
// jwksUri: keys are in the file, and rotating one is a reload.
//
// # Scopes and audiences
//
// A request without scope gets 400 invalid_scope, unless the client (or
// the global default) says scopeWhenOmitted "all": then it gets every
// scope it is allowed, as IdentityServer does. A repeatable resource
// parameter ([RFC 8707]) asks for a token for those audiences only, each
// an absolute URI among the client's; any other is 400 invalid_target.
//
// [RFC 6749]: https://www.rfc-editor.org/rfc/rfc6749
// [RFC 7638]: https://www.rfc-editor.org/rfc/rfc7638
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
// [RFC 7523]: https://www.rfc-editor.org/rfc/rfc7523
// [RFC 8707]: https://www.rfc-editor.org/rfc/rfc8707
package issuer
