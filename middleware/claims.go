package middleware

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

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
	ClientID  string    // client_id
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

// The range of a NumericDate this package reads: years 1 to 9999, as in
// RFC 3339. Wider values are refused rather than overflow time.Time or
// int64 arithmetic (1e19 and 1e300 are valid JSON numbers).
const (
	minNumericDate = -62135596800 // 0001-01-01T00:00:00Z
	maxNumericDate = 253402300799 // 9999-12-31T23:59:59Z
)

// NewClaims reads an access token's claim set, the JSON of its payload,
// into a Claims whose Decode and Raw work: for a TokenValidator of your
// own, after it has verified the token. It checks what Validate checks
// of the claims' form (each registered claim of its JSON type, names
// matched exactly ([RFC 7519] §4), the scope claim ("scope", or "scp"
// without it) as scope.ParseClaim reads it) and nothing else: no time, issuer, audience or "cnf". It
// fails with ErrMalformed, ErrScopeName or ErrScopeClaim.
//
// [RFC 7519]: https://www.rfc-editor.org/rfc/rfc7519
func NewClaims(payload []byte) (*Claims, error) {
	raw, err := readClaimSet(payload)
	if err != nil {
		return nil, err
	}
	c, f, err := parseClaims(raw, base64.RawURLEncoding.EncodeToString(payload))
	if err != nil {
		return nil, err
	}
	if c.Scopes, err = scope.ParseClaim(f.scope); err != nil {
		return nil, err
	}
	return c, nil
}

// claimFacts is what parseClaims finds beside the Claims.
type claimFacts struct {
	exp, nbf, iat *time.Time      // nil when absent
	cnf           bool            // a "cnf" claim is present
	scope         json.RawMessage // the scope claim (scopeClaim), read last
}

// claimSet is a token's payload split into its claims, each the JSON of
// its value, by its exact name. It is a map, not a struct, since
// encoding/json matches struct fields without regard to case and "EXP"
// would pass for "exp" (RFC 7519 §4: names are case-sensitive); of
// duplicate names, the last wins.
type claimSet map[string]json.RawMessage

// readClaimSet splits a payload into its claims, or fails with
// ErrMalformed when it is not a JSON object. It runs before the signature
// is checked, to find the issuer, on at most MaxTokenSize bytes; it
// decodes no claim's value.
func readClaimSet(payload []byte) (claimSet, error) {
	var raw claimSet
	if err := json.Unmarshal(payload, &raw); err != nil || raw == nil { // nil: the payload was null
		return nil, ErrMalformed
	}
	return raw, nil
}

// parseClaims reads a claim set into a Claims, all but its Scopes.
// payload64 is its base64url form, kept for Claims.Decode. Every
// registered claim this package reads must have its JSON type; JSON null
// counts as absent.
func parseClaims(raw claimSet, payload64 string) (*Claims, claimFacts, error) {
	var t claimFacts
	t.scope = scopeClaim(raw)
	c := &Claims{payload: payload64}
	for name, val := range raw {
		var err error
		switch name {
		case "iss":
			err = jsonString(val, &c.Issuer)
		case "sub":
			err = jsonString(val, &c.Subject)
		case "client_id":
			err = jsonString(val, &c.ClientID)
		case "jti":
			err = jsonString(val, &c.ID)
		case "aud":
			c.Audience, err = audience(val)
		case "exp":
			t.exp, err = numericDate(val, &c.ExpiresAt)
		case "nbf":
			t.nbf, err = numericDate(val, &c.NotBefore)
		case "iat":
			t.iat, err = numericDate(val, &c.IssuedAt)
		case "cnf":
			t.cnf = !isNull(val)
			c.bound = t.cnf
			var cnf struct {
				JKT *string `json:"jkt"`
			}
			if t.cnf && (json.Unmarshal(val, &cnf) != nil || (cnf.JKT != nil && *cnf.JKT == "")) {
				err = ErrMalformed
			} else if cnf.JKT != nil {
				c.JKT = *cnf.JKT
			}
		default:
			// A client claim that is not a string or an array of strings
			// is not one of IdentityServer's: left in Raw, not refused.
			if name, ok := strings.CutPrefix(name, "client_"); ok && name != "" {
				if vs, verr := stringOrStrings(val); verr == nil && vs != nil {
					if c.ClientClaims == nil {
						c.ClientClaims = map[string][]string{}
					}
					c.ClientClaims[name] = vs
				}
			}
		}
		if err != nil {
			return nil, t, ErrMalformed
		}
	}
	return c, t, nil
}

// scopeClaim returns the raw value of the claim that holds the scopes:
// "scope" (RFC 9068), or, when it is absent or null, "scp", where ORY
// Hydra and Okta put an array and Microsoft Entra ID a space-delimited
// string, as Spring Security's resource server reads them. "scp" is never
// read beside a "scope", so no token has two scope sets.
func scopeClaim(raw claimSet) json.RawMessage {
	if v, ok := raw["scope"]; ok && !isNull(v) {
		return v
	}
	return raw["scp"]
}

// issuerClaim reads the "iss" of a claim set whose signature is not
// checked yet, so that the issuer whose keys check it can be chosen. It
// decodes that claim alone, as parseClaims does (null is absent), so the
// two never disagree.
func issuerClaim(raw claimSet) (string, error) {
	var iss string
	if val, ok := raw["iss"]; ok && jsonString(val, &iss) != nil {
		return "", ErrMalformed
	}
	return iss, nil
}

// claims decodes and checks the claim set of a token whose signature the
// keys of from verified: its form (parseClaims), then exp, nbf, iat with
// leeway, iss and aud against from, and last the scope claim. A binding
// (cnf) is checked by binding, for each request, since the cache keeps
// the claims. The "iss"
// was checked when from was chosen by it; it is compared again so that
// this function alone says every claim is right.
func (v *Validator) claims(from *trustedIssuer, raw claimSet, payload64 string, now time.Time) (*Claims, error) {
	c, t, err := parseClaims(raw, payload64)
	switch {
	case err != nil:
		return nil, err
	case t.exp == nil:
		return nil, ErrMissingClaim
	case !now.Before(t.exp.Add(v.leeway)):
		return nil, &ValidationError{Reason: ErrExpired, Expiry: *t.exp, Now: now}
	case t.nbf != nil && now.Add(v.leeway).Before(*t.nbf):
		return nil, &ValidationError{Reason: ErrNotYetValid, NotBefore: *t.nbf, Now: now}
	case t.iat != nil && now.Add(v.leeway).Before(*t.iat):
		return nil, &ValidationError{Reason: ErrIssuedInFuture, IssuedAt: *t.iat, Now: now}
	case c.Issuer != from.issuer:
		// Unreachable while the issuer is chosen by "iss"; kept as a
		// guard. An untrusted "iss" is never reported: it never verified.
		return nil, &ValidationError{Reason: ErrIssuer}
	case len(from.audience) > 0 && !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(from.audience, a) }):
		return nil, &ValidationError{Reason: ErrAudience, Audience: c.Audience}
	}
	// ErrScopeName and ErrScopeClaim are ParseClaim's own errors.
	if c.Scopes, err = scope.ParseClaim(t.scope); err != nil {
		return nil, err
	}
	return c, nil
}

// binding refuses a token bound to a key (cnf) presented as a plain
// bearer token, unless AllowBoundTokens: presented so it is probably
// stolen, since its holder would prove the key. A request that presents
// it with DPoP (RequireBearer marks its context, checks the proof, and
// compares the proof's key with c.JKT) passes here.
func (v *Validator) binding(ctx context.Context, c *Claims) error {
	if c.bound && !v.allowBound && !presentedWithDPoP(ctx) {
		return ErrBoundToken
	}
	return nil
}

type dpopKey struct{}

// withDPoP marks ctx as a request that presents its token with DPoP.
func withDPoP(ctx context.Context) context.Context { return context.WithValue(ctx, dpopKey{}, true) }

func presentedWithDPoP(ctx context.Context) bool { b, _ := ctx.Value(dpopKey{}).(bool); return b }

func isNull(val json.RawMessage) bool { return string(val) == "null" }

// jsonString reads a JSON string (or null) into dst.
func jsonString(val json.RawMessage, dst *string) error {
	if isNull(val) {
		return nil
	}
	if len(val) == 0 || val[0] != '"' {
		return ErrMalformed
	}
	return json.Unmarshal(val, dst)
}

// stringOrStrings reads a claim that is a string or an array of strings,
// as IdentityServer writes a client claim given once or several times;
// null is absent.
func stringOrStrings(val json.RawMessage) ([]string, error) { return audience(val) }

// audience reads "aud": one string or an array of strings (RFC 7519 §4.1.3).
func audience(val json.RawMessage) ([]string, error) {
	switch {
	case isNull(val):
		return nil, nil
	case len(val) > 0 && val[0] == '"':
		var s string
		err := json.Unmarshal(val, &s)
		return []string{s}, err
	case len(val) > 0 && val[0] == '[':
		var list []string
		err := json.Unmarshal(val, &list)
		return list, err
	}
	return nil, ErrMalformed
}

// numericDate reads a NumericDate (RFC 7519 §2): a JSON number of seconds,
// fractions allowed, within years 1 to 9999. It returns nil for null.
func numericDate(val json.RawMessage, dst *time.Time) (*time.Time, error) {
	if isNull(val) {
		return nil, nil
	}
	// The document is valid JSON, so a value starting so is a number.
	if len(val) == 0 || (val[0] != '-' && (val[0] < '0' || val[0] > '9')) {
		return nil, ErrMalformed
	}
	f, err := strconv.ParseFloat(string(val), 64)
	if err != nil || math.IsNaN(f) || f < minNumericDate || f > maxNumericDate {
		return nil, ErrMalformed
	}
	sec, frac := math.Modf(f)
	*dst = time.Unix(int64(sec), int64(frac*1e9))
	return dst, nil
}
