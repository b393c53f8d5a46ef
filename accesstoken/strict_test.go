package accesstoken_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/scope"
)

// signPayload signs a payload written by hand with k, under a header of
// jwktest's defaults.
func signPayload(t *testing.T, k *keys.Key, payload string) string {
	t.Helper()
	h := jwktest.Segment(map[string]any{"alg": k.Alg, "typ": "at+jwt", "kid": k.KID})
	p := base64.RawURLEncoding.EncodeToString([]byte(payload))
	sig, err := jwt.GetSigningMethod(k.Alg).Sign(h+"."+p, k.Private)
	if err != nil {
		t.Fatal(err)
	}
	return h + "." + p + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// TestValidatorStrictClaims: tokens signed by the trusted key but shaped
// wrong (issue 12). Every one is refused with the reason given.
func TestValidatorStrictClaims(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	src := newCountingKeys(k)
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, CacheSize: -1})
	now := time.Now().Unix()
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	head := `"iss":"` + iss + `","aud":"` + iss + `/resources","scope":"pd_AdminWebApi"`
	times := func(iat, nbf, exp string) string {
		return `{` + head + `,"iat":` + iat + `,"nbf":` + nbf + `,"exp":` + exp + `}`
	}
	cases := []struct {
		name    string
		payload string
		want    error
	}{
		{"baseline", times(n(now), n(now), n(now+3600)), nil},
		{"fractional NumericDates are numbers too", times(n(now)+".5", n(now)+".25", n(now+3600)+".75"), nil},
		{"nbf 1e300", times(n(now), "1e300", n(now+3600)), accesstoken.ErrMalformed},
		{"nbf 1e19", times(n(now), "1e19", n(now+3600)), accesstoken.ErrMalformed},
		{"nbf -1e19", times(n(now), "-1e19", n(now+3600)), accesstoken.ErrMalformed},
		{"iat 1e300", times("1e300", n(now), n(now+3600)), accesstoken.ErrMalformed},
		{"exp 1e300", times(n(now), n(now), "1e300"), accesstoken.ErrMalformed},
		{"exp 1e19", times(n(now), n(now), "1e19"), accesstoken.ErrMalformed},
		{"exp 9223372036854775807", times(n(now), n(now), "9223372036854775807"), accesstoken.ErrMalformed},
		{"exp 1e400 (not even a float64)", times(n(now), n(now), "1e400"), accesstoken.ErrMalformed},
		{"exp as a numeric string", times(n(now), n(now), `"9999999999"`), accesstoken.ErrMalformed},
		{"nbf as a string", times(n(now), `"0"`, n(now+3600)), accesstoken.ErrMalformed},
		{"exp as true", times(n(now), n(now), `true`), accesstoken.ErrMalformed},
		{"exp as an array", times(n(now), n(now), `[9999999999]`), accesstoken.ErrMalformed},
		{"exp null is a missing exp", times(n(now), n(now), `null`), accesstoken.ErrMissingClaim},
		{"exp past, EXP future", `{` + head + `,"exp":` + n(now-3600) + `,"EXP":` + n(now+3600) + `}`, accesstoken.ErrExpired},
		{"EXP only", `{` + head + `,"EXP":` + n(now+3600) + `}`, accesstoken.ErrMissingClaim},
		{"ISS right, iss wrong", `{"iss":"https://evil.example/ids","ISS":"` + iss + `","aud":"` + iss + `/resources","exp":` + n(now+3600) + `}`, accesstoken.ErrIssuer},
		{"Iss only", `{"Iss":"` + iss + `","aud":"` + iss + `/resources","exp":` + n(now+3600) + `}`, accesstoken.ErrIssuer},
		{"AUD right, aud wrong", `{"iss":"` + iss + `","aud":"other","AUD":"` + iss + `/resources","exp":` + n(now+3600) + `}`, accesstoken.ErrAudience},
		{"NBF ignored, nbf in the future", `{` + head + `,"nbf":` + n(now+3600) + `,"NBF":0,"exp":` + n(now+7200) + `}`, accesstoken.ErrNotYetValid},
		{"iss as a number", `{"iss":5,"exp":` + n(now+3600) + `}`, accesstoken.ErrMalformed},
		{"aud array with a number", `{"iss":"` + iss + `","aud":["` + iss + `/resources",1],"exp":` + n(now+3600) + `}`, accesstoken.ErrMalformed},
		{"payload not an object", `[1]`, accesstoken.ErrMalformed},
		{"payload with trailing data", times(n(now), n(now), n(now+3600)) + `x`, accesstoken.ErrMalformed},
		{"scope on a non-breaking space", `{"iss":"` + iss + `","aud":"` + iss + `/resources","exp":` + n(now+3600) + `,"scope":"pd_ConnectWebApi\u00a0pd_AdminWebApi"}`, accesstoken.ErrScopeName},
		{"cnf with jkt", `{` + head + `,"exp":` + n(now+3600) + `,"cnf":{"jkt":"0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}`, accesstoken.ErrBoundToken},
		{"cnf with x5t#S256", `{` + head + `,"exp":` + n(now+3600) + `,"cnf":{"x5t#S256":"bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}}`, accesstoken.ErrBoundToken},
		{"CNF is just a claim", `{` + head + `,"exp":` + n(now+3600) + `,"CNF":{"jkt":"x"}}`, nil},
		// A member named twice makes the set malformed: the first and the
		// last would each be some reader's claim (RFC 7519 §4).
		{"exp twice, the last past", `{` + head + `,"exp":` + n(now+3600) + `,"exp":` + n(now-3600) + `}`, accesstoken.ErrMalformed},
		{"exp twice, the last future", `{` + head + `,"exp":` + n(now-3600) + `,"exp":` + n(now+3600) + `}`, accesstoken.ErrMalformed},
		{"scope twice", `{` + head + `,"exp":` + n(now+3600) + `,"scope":"pd_ConnectWebApi"}`, accesstoken.ErrMalformed},
		{"aud twice, one escaped", `{` + head + `,"exp":` + n(now+3600) + `,"\u0061ud":"other"}`, accesstoken.ErrMalformed},
		{"jkt twice in cnf", `{` + head + `,"exp":` + n(now+3600) + `,"cnf":{"jkt":"a","jkt":"b"}}`, accesstoken.ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			claims, err := v.Validate(context.Background(), signPayload(t, k, c.payload), accesstoken.Presentation{})
			if c.want == nil {
				if err != nil || claims == nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) || claims != nil {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("a 1e300 nbf never reaches the time checks", func(t *testing.T) {
		// With a clock far in the future the check would pass if 1e300
		// were read as a time at all.
		far := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, Now: func() time.Time { return time.Unix(1<<40, 0) }, Leeway: -1})
		if _, err := far.Validate(context.Background(), signPayload(t, k, times(n(now), "1e300", "1e300")), accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrMalformed) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestValidatorBoundTokensOptIn(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	tok := jwktest.Sign(t, k, nil, jwktest.With(jwktest.Claims(iss, scope.AdminWebAPI, time.Hour), "cnf", map[string]any{"jkt": "abc"}))
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k)})
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrBoundToken) || err.Error() != "token is bound to a key" {
		t.Fatalf("default: err = %v", err)
	}
	opt := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k), AllowBoundTokens: true})
	c, err := opt.Validate(context.Background(), tok, accesstoken.Presentation{})
	if err != nil {
		t.Fatalf("opted in: %v", err)
	}
	raw, err := c.Raw()
	if err != nil || raw["cnf"] == nil {
		t.Fatalf("cnf not readable: %v %v", raw, err)
	}
}

// TestValidatorSizeCap: the cap applies before any decoding, so an
// oversized token is refused whatever it holds, valid signature included.
func TestValidatorSizeCap(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	src := newCountingKeys(k)
	claims := jwktest.Claims(iss, scope.AdminWebAPI, time.Hour)
	pad := func(size int) string {
		// A valid token of exactly size bytes, padded in a private claim.
		base := len(jwktest.Sign(t, k, nil, jwktest.With(claims, "pad", "")))
		tok := jwktest.Sign(t, k, nil, jwktest.With(claims, "pad", strings.Repeat("p", (size-base)*3/4)))
		for len(tok) < size {
			tok = jwktest.Sign(t, k, nil, jwktest.With(claims, "pad", strings.Repeat("p", (size-base)*3/4+(size-len(tok)))))
		}
		return tok
	}
	def := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, CacheSize: -1})
	small := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, CacheSize: -1, MaxTokenSize: 2048})
	at, over := pad(16<<10-8), pad(16<<10+8)
	if len(at) > 16<<10 || len(over) <= 16<<10 { // the default MaxTokenSize
		t.Fatalf("sizes %d %d", len(at), len(over))
	}
	before := src.lookups.Load()
	for _, c := range []struct {
		name string
		v    *accesstoken.Validator
		tok  string
		want error
	}{
		{"just under the default cap", def, at, nil},
		{"just over the default cap", def, over, accesstoken.ErrTooLarge},
		{"940 KiB", def, strings.Repeat("A", 940<<10), accesstoken.ErrTooLarge},
		{"over a configured cap", small, pad(2100), accesstoken.ErrTooLarge},
		{"under a configured cap", small, pad(1500), nil},
	} {
		_, err := c.v.Validate(context.Background(), c.tok, accesstoken.Presentation{})
		if (c.want == nil && err != nil) || !errors.Is(err, c.want) {
			t.Errorf("%s (%d bytes): err = %v, want %v", c.name, len(c.tok), err, c.want)
		}
	}
	if n := src.lookups.Load() - before; n != 2 {
		t.Errorf("%d key lookups, want 2: an oversized token must not get that far", n)
	}
	if _, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss, Keys: src, AnyAudience: true, MaxTokenSize: -1}); err == nil {
		t.Error("a negative MaxTokenSize was accepted")
	}
}

// TestValidatorSignatureBeforeClaims: of a payload, only its form (a
// JSON object) and its "iss" are read before the signature. Claims that
// are all wrong are refused for the signature when it is wrong, and for
// themselves when it is good; a payload that is no JSON object is refused
// as malformed before any key is looked up, whoever signed it.
func TestValidatorSignatureBeforeClaims(t *testing.T) {
	k, other := jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "ES256")
	src := newCountingKeys(k)
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, CacheSize: -1})
	// other's signature under k's kid
	forge := func(payload string) string {
		tok := signPayload(t, other, payload)
		return strings.Replace(tok, jwktest.Segment(map[string]any{"alg": "ES256", "typ": "at+jwt", "kid": other.KID}), jwktest.Segment(map[string]any{"alg": "ES256", "typ": "at+jwt", "kid": k.KID}), 1)
	}
	broken := `{"iss":"` + iss + `","aud":7,"exp":"soon","nbf":1e300,"scope":{"pd_AdminWebApi":1},"cnf":{}}`
	for _, c := range []struct {
		name    string
		tok     string
		want    error
		lookups int64
	}{
		{"broken claims, wrong signature", forge(broken), accesstoken.ErrSignature, 1},
		{"broken claims, good signature", signPayload(t, k, broken), accesstoken.ErrMalformed, 1},
		{"not JSON, wrong signature", forge(`{"exp":`), accesstoken.ErrMalformed, 0},
		{"not JSON, good signature", signPayload(t, k, `{"exp":`), accesstoken.ErrMalformed, 0},
		{"null", signPayload(t, k, `null`), accesstoken.ErrMalformed, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := src.lookups.Load()
			if _, err := v.Validate(context.Background(), c.tok, accesstoken.Presentation{}); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if n := src.lookups.Load() - before; n != c.lookups {
				t.Errorf("%d key lookups, want %d", n, c.lookups)
			}
		})
	}
}

func TestValidatorAudienceRequired(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	src := newCountingKeys(k)
	if _, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss, Keys: src}); err == nil || !strings.Contains(err.Error(), "Audience is required") {
		t.Fatalf("no audience: err = %v", err)
	}
	if _, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss, Keys: src, Audience: []string{"a"}, AnyAudience: true}); err == nil {
		t.Fatal("Audience with AnyAudience accepted")
	}
	mine := jwktest.Sign(t, k, nil, jwktest.With(jwktest.Claims(iss, scope.AdminWebAPI, time.Hour), "aud", "https://admin-api.example"))
	theirs := jwktest.Sign(t, k, nil, jwktest.With(jwktest.Claims(iss, scope.AdminWebAPI, time.Hour), "aud", []string{"https://billing.example"}))
	none := jwktest.Sign(t, k, nil, jwktest.With(jwktest.Claims(iss, scope.AdminWebAPI, time.Hour), "aud", nil))
	strict := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, Audience: []string{"https://admin-api.example"}})
	anyAud := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, AnyAudience: true})
	for _, c := range []struct {
		name string
		v    *accesstoken.Validator
		tok  string
		want error
	}{
		{"ours", strict, mine, nil},
		{"minted for another resource server", strict, theirs, accesstoken.ErrAudience},
		{"no aud", strict, none, accesstoken.ErrAudience},
		{"any audience, said explicitly", anyAud, theirs, nil},
		{"any audience, none at all", anyAud, none, nil},
	} {
		if _, err := c.v.Validate(context.Background(), c.tok, accesstoken.Presentation{}); (c.want == nil && err != nil) || !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

// jwksBody is a JWKS of the given JWKs.
func jwksBody(t *testing.T, ks ...any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": ks})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestValidatorJWKUse: only keys without "use" or with "use":"sig" (and
// with "verify" among their key_ops, if any) verify tokens, with a kid or
// without one.
func TestValidatorJWKUse(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	claims := jwktest.Claims("", scope.AdminWebAPI, time.Hour)
	jwk := func(use string, ops ...string) map[string]any {
		j := k.PublicJWK()
		j.Use = use
		b, _ := json.Marshal(j)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if ops != nil {
			m["key_ops"] = ops
		}
		return m
	}
	for _, c := range []struct {
		name string
		jwk  map[string]any
		ok   bool
	}{
		{"use sig", jwk("sig"), true},
		{"no use", jwk(""), true},
		{"use enc", jwk("enc"), false},
		{"key_ops verify", jwk("", "verify"), true},
		{"key_ops encrypt only", jwk("", "encrypt"), false},
	} {
		for _, withKID := range []bool{true, false} {
			t.Run(c.name+" kid "+strconv.FormatBool(withKID), func(t *testing.T) {
				jwks := jwktest.NewJWKS(t)
				jwks.SetBody(jwksBody(t, c.jwk))
				v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Keys: newJWKS(t, accesstoken.JWKSConfig{URL: jwks.JWKSURL(), RefreshUnknownKID: rate.NewLimiter(rate.Every(time.Hour), 1)})})
				var header map[string]any
				if !withKID {
					header = map[string]any{"kid": nil}
				}
				tok := jwktest.Sign(t, k, header, jwktest.With(claims, "iss", jwks.Issuer(), "aud", jwks.Issuer()+"/resources"))
				_, err := v.Validate(context.Background(), tok, accesstoken.Presentation{})
				if c.ok && err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !c.ok && !errors.Is(err, accesstoken.ErrUnknownKey) {
					t.Fatalf("err = %v, want ErrUnknownKey", err)
				}
			})
		}
	}
}

// TestValidatorJWKAlg: a JWK whose "alg" is PS256 verifies PS256 tokens
// only, though its RSA key would verify an RS256 signature: with a kid the
// token fails with ErrAlgorithm, without one no key fits it.
func TestValidatorJWKAlg(t *testing.T) {
	rs := jwktest.NewKey(t, "RS256")
	ps, err := keys.New("PS256", rs.Private)
	if err != nil {
		t.Fatal(err)
	}
	jwks := jwktest.NewJWKS(t, ps)
	v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Keys: newJWKS(t, accesstoken.JWKSConfig{URL: jwks.JWKSURL(), RefreshUnknownKID: rate.NewLimiter(rate.Every(time.Hour), 1)})})
	c := jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour)
	for _, withKID := range []bool{true, false} {
		var header map[string]any
		if !withKID {
			header = map[string]any{"kid": nil}
		}
		if _, err := v.Validate(context.Background(), jwktest.Sign(t, ps, header, c), accesstoken.Presentation{}); err != nil {
			t.Errorf("PS256, kid %v: %v", withKID, err)
		}
		want := accesstoken.ErrAlgorithm
		if !withKID {
			want = accesstoken.ErrUnknownKey
		}
		if _, err := v.Validate(context.Background(), jwktest.Sign(t, rs, header, c), accesstoken.Presentation{}); !errors.Is(err, want) {
			t.Errorf("RS256, kid %v: err = %v, want %v", withKID, err, want)
		}
	}
}

// TestValidatorEd25519Alg: "Ed25519" (RFC 9864) is EdDSA over an Ed25519
// key, from a JWKS whose key says "EdDSA", "Ed25519" or nothing, and from
// an in-process key source.
func TestValidatorEd25519Alg(t *testing.T) {
	ed, ec := jwktest.NewKey(t, "EdDSA"), jwktest.NewKey(t, "ES256")
	claims := jwktest.Claims("", scope.AdminWebAPI, time.Hour)
	for _, jwkAlg := range []string{"EdDSA", "Ed25519", ""} {
		t.Run("JWK alg "+jwkAlg, func(t *testing.T) {
			j := ed.PublicJWK()
			j.Alg = jwkAlg
			jwks := jwktest.NewJWKS(t)
			jwks.SetBody(jwksBody(t, j))
			v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer()})
			c := jwktest.With(claims, "iss", jwks.Issuer(), "aud", jwks.Issuer()+"/resources")
			for _, alg := range []string{"Ed25519", "EdDSA"} {
				if _, err := v.Validate(context.Background(), jwktest.Sign(t, ed, map[string]any{"alg": alg}, c), accesstoken.Presentation{}); err != nil {
					t.Errorf("alg %s: %v", alg, err)
				}
			}
		})
	}
	c := jwktest.With(claims, "iss", iss, "aud", iss+"/resources")
	edTok := jwktest.Sign(t, ed, map[string]any{"alg": "Ed25519"}, c)
	t.Run("listed alone in Algorithms", func(t *testing.T) {
		v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(ed), Algorithms: []string{"Ed25519"}})
		if _, err := v.Validate(context.Background(), edTok, accesstoken.Presentation{}); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Validate(context.Background(), jwktest.Sign(t, ed, nil, c), accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrAlgorithm) {
			t.Fatalf("EdDSA not listed: err = %v", err)
		}
	})
	t.Run("not listed", func(t *testing.T) {
		v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(ed), Algorithms: []string{"EdDSA"}})
		if _, err := v.Validate(context.Background(), edTok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrAlgorithm) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("over an ECDSA key", func(t *testing.T) {
		v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(ec)})
		tok := jwktest.Sign(t, ec, nil, c)
		parts := strings.Split(tok, ".")
		h := jwktest.Segment(map[string]any{"alg": "Ed25519", "typ": "at+jwt", "kid": ec.KID})
		if _, err := v.Validate(context.Background(), h+"."+parts[1]+"."+parts[2], accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrSignature) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestValidatorIdenticalJWKSRefetchKeepsCache: a token with an unknown kid
// makes the validator fetch the JWKS again; when the set comes back the
// same, tokens already validated stay cached (the same *Claims comes
// back, without a second validation); when it comes back changed, they
// are validated again.
func TestValidatorIdenticalJWKSRefetchKeepsCache(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, k)
	v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Keys: newJWKS(t, accesstoken.JWKSConfig{URL: jwks.JWKSURL(), RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1)})})
	c := jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour)
	tok := jwktest.Sign(t, k, nil, c)
	first, err := v.Validate(context.Background(), tok, accesstoken.Presentation{})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := v.Validate(context.Background(), tok, accesstoken.Presentation{}); again != first {
		t.Fatal("the cache is not on: the test proves nothing")
	}
	for range 5 {
		hits := jwks.Hits()
		if _, err := v.Validate(context.Background(), jwktest.Sign(t, jwktest.NewKey(t, "ES256"), nil, c), accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrUnknownKey) {
			t.Fatalf("err = %v", err)
		}
		if jwks.Hits() != hits+1 {
			t.Fatalf("the unknown kid caused %d fetches, want 1", jwks.Hits()-hits)
		}
		if again, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil || again != first {
			t.Fatalf("an identical key set emptied the cache (%v)", err)
		}
	}
	// Control: a changed key set does empty it.
	jwks.SetKeys(k, jwktest.NewKey(t, "ES256"))
	if _, err := v.Validate(context.Background(), jwktest.Sign(t, jwktest.NewKey(t, "ES256"), nil, c), accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrUnknownKey) {
		t.Fatalf("err = %v", err)
	}
	if again, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil || again == first {
		t.Fatalf("a changed key set kept the cache (%v)", err)
	}
}
