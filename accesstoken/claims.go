package accesstoken

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/scope"
)

// Claims are the validated claims of an access token ([RFC 9068] §2.2).
// A *Claims may be shared between requests that carry the same token:
// treat it as read-only.
//
// Scopes come from the "scope" claim. A token without one (or with
// "scope": null) has its scopes read from "scp" instead, where ORY Hydra
// and Okta write an array and Microsoft Entra ID a space-delimited string;
// "scp" is held to the rules of "scope" (scope.ParseClaim), and is not
// read at all beside a "scope".
//
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
type Claims struct {
	Issuer    string    // iss
	Subject   string    // sub
	ClientID  string    // client_id, or, without one, azp (Keycloak, Auth0, Entra v2); others (Okta's cid, Entra v1's appid) are in Raw
	Audience  []string  // aud
	Scopes    scope.Set // scope, or scp when scope is absent; from a space-delimited string or an array
	IssuedAt  time.Time // iat; zero when absent
	NotBefore time.Time // nbf; zero when absent
	ExpiresAt time.Time // exp
	ID        string    // jti
	// JKT is the thumbprint of the key a DPoP-bound token is bound to
	// (cnf.jkt, RFC 9449 §6): RequireBearer admits such a token only with
	// a proof by that key. Empty for a bearer token.
	JKT string
	// X5T is the SHA-256 thumbprint of the client certificate a
	// certificate-bound token is bound to (cnf["x5t#S256"], RFC 8705
	// §3.1): base64url, as Presentation.CertThumbprint. Validate admits
	// such a token only from a request that presented that certificate.
	// Empty for a token bound to no certificate.
	X5T string
	// ClientClaims are the client's claims, IdentityServer's "client_"
	// claims (other than client_id) by their name without the prefix:
	// "client_tenant": "acme" is ClientClaims["tenant"] = ["acme"]; an
	// array gives each of its strings. Nil when there is none.
	ClientClaims map[string][]string

	payload string // the token's payload segment, for Decode
	bound   bool   // a "cnf" claim is present: bound to a key (DPoP, mTLS, RFC 7800)
}

// Decode unmarshals the whole claim set into v, for claims this type does
// not name.
func (c *Claims) Decode(v any) error {
	b, err := base64.RawURLEncoding.DecodeString(c.payload)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Raw returns the whole claim set as a map.
func (c *Claims) Raw() (map[string]any, error) {
	var m map[string]any
	return m, c.Decode(&m)
}

// NewClaims reads an access token's claim set, the JSON of its payload,
// into a Claims whose Decode and Raw work: for a TokenValidator of your
// own, after it has verified the token. It checks what Validate checks
// of the claims' form (each registered claim of its JSON type, names
// matched exactly ([RFC 7519] §4), no name twice, the scope claim
// ("scope", or "scp" without it) as scope.ParseClaim reads it) and
// nothing else: no time, issuer, audience or "cnf". It fails with a
// *ValidationError whose Code is malformed, scope_name or scope_claim.
//
// [RFC 7519]: https://www.rfc-editor.org/rfc/rfc7519
func NewClaims(payload []byte) (*Claims, error) {
	raw, err := readClaimSet(payload)
	if err != nil {
		return nil, refused(err)
	}
	c, f, err := parseClaims(raw, base64.RawURLEncoding.EncodeToString(payload), "")
	if err != nil {
		return nil, refused(err)
	}
	if c.Scopes, err = scope.ParseClaim(f.scope); err != nil {
		return nil, refused(err)
	}
	return c, nil
}

// claimFacts is what parseClaims finds beside the Claims.
type claimFacts struct {
	exp, nbf, iat bool            // present
	scope         json.RawMessage // the scope claim (scopeClaim), read last
}

// readClaimSet splits a payload into its claims by the rules of the one
// reader (jws.ReadClaims: names matched exactly, a name given twice
// refused, null absent), or fails with errMalformed. It runs before the
// signature is checked, to find the issuer, on at most MaxTokenSize
// bytes; it decodes no claim's value.
func readClaimSet(payload []byte) (jws.Claims, error) {
	raw, err := jws.ReadClaims(payload)
	if err != nil {
		return jws.Claims{}, errMalformed
	}
	return raw, nil
}

// parseClaims reads a claim set into a Claims, all but its Scopes.
// payload64 is its base64url form, kept for Claims.Decode; issuer is the
// Issuer of a set without "iss" (an introspection answer may leave it
// out). Every registered claim this package reads must have its JSON
// type.
func parseClaims(raw jws.Claims, payload64, issuer string) (*Claims, claimFacts, error) {
	var f claimFacts
	c := &Claims{payload: payload64, Issuer: issuer}
	var err error
	for _, s := range [...]struct {
		name string
		dst  *string
	}{{"iss", &c.Issuer}, {"sub", &c.Subject}, {"client_id", &c.ClientID}, {"jti", &c.ID}} {
		if v, ok, serr := raw.String(s.name); serr != nil {
			return nil, f, errMalformed
		} else if ok {
			*s.dst = v
		}
	}
	if c.ClientID == "" {
		// OpenID Connect's authorized party: where Keycloak, Auth0 and
		// Microsoft Entra (v2) name the client of an access token.
		c.ClientID, _, _ = raw.String("azp")
	}
	if c.Audience, _, err = raw.Strings("aud"); err != nil {
		return nil, f, errMalformed
	}
	for _, d := range [...]struct {
		name    string
		dst     *time.Time
		present *bool
	}{{"exp", &c.ExpiresAt, &f.exp}, {"nbf", &c.NotBefore, &f.nbf}, {"iat", &c.IssuedAt, &f.iat}} {
		if *d.dst, *d.present, err = raw.Time(d.name); err != nil {
			return nil, f, errMalformed
		}
	}
	if cnf, ok := raw.Raw("cnf"); ok {
		// An object whose "jkt" and "x5t#S256", when present, are strings
		// that are not empty; its members are named exactly, as the
		// claims are.
		c.bound = true
		m, err := jws.ReadClaims(cnf)
		if err != nil {
			return nil, f, errMalformed
		}
		for _, member := range [...]struct {
			name string
			dst  *string
		}{{"jkt", &c.JKT}, {"x5t#S256", &c.X5T}} {
			v, present, err := m.String(member.name)
			if err != nil || (present && v == "") {
				return nil, f, errMalformed
			}
			*member.dst = v
		}
	}
	// A client claim that is not a string or an array of strings is not
	// one of IdentityServer's: left in Raw, not refused.
	_ = raw.Each(func(name string, val json.RawMessage) error {
		if name, ok := strings.CutPrefix(name, "client_"); ok && name != "" && name != "id" {
			if vs, verr := jws.StringOrStrings(val); verr == nil && vs != nil {
				if c.ClientClaims == nil {
					c.ClientClaims = map[string][]string{}
				}
				c.ClientClaims[name] = vs
			}
		}
		return nil
	})
	f.scope = scopeClaim(raw)
	return c, f, nil
}

// scopeClaim returns the raw value of the claim that holds the scopes:
// "scope" (RFC 9068), or, when it is absent or null, "scp", where ORY
// Hydra and Okta put an array and Microsoft Entra ID a space-delimited
// string, as Spring Security's resource server reads them. "scp" is never
// read beside a "scope", so no token has two scope sets.
func scopeClaim(raw jws.Claims) json.RawMessage {
	if v, ok := raw.Raw("scope"); ok {
		return v
	}
	v, _ := raw.Raw("scp")
	return v
}

// issuerClaim reads the "iss" of a claim set whose signature is not
// checked yet, so that the issuer whose keys check it can be chosen. It
// reads it as parseClaims does, so the two never disagree.
func issuerClaim(raw jws.Claims) (string, error) {
	iss, _, err := raw.String("iss")
	if err != nil {
		return "", errMalformed
	}
	return iss, nil
}
