package accesstoken_test

import (
	"context"
	"crypto"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/scope"
)

// countingTransport counts the requests a Validator makes: discovery
// documents and JWKS alike.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// twoIssuers is a validator trusting two identity services on loopback,
// each with its own JWKS server found by discovery: a, standing for this
// module's issuer (ES256, aud "{issuer}/resources", scope a string), and
// b, standing for IdentityServer with its static audience off (RS256, aud
// the API resource name "admin-api", scope an array).
type twoIssuers struct {
	v          *accesstoken.Validator
	ka, kb     *keys.Key
	a, b       *jwktest.JWKS
	fetches    *countingTransport
	audA, audB string
}

func newTwoIssuers(t *testing.T) *twoIssuers {
	t.Helper()
	w := &twoIssuers{ka: jwktest.NewKey(t, "ES256"), kb: jwktest.NewKey(t, "RS256"), fetches: &countingTransport{}}
	w.a, w.b = jwktest.NewJWKS(t, w.ka), jwktest.NewJWKS(t, w.kb)
	w.audA, w.audB = w.a.Issuer()+"/resources", "admin-api"
	w.v = newValidatorOf(t, accesstoken.Config{
		Issuers: []accesstoken.TrustedIssuer{
			{Issuer: w.a.Issuer(), Audience: []string{w.audA}, Keys: newJWKS(t, fetchedAs(w.a, w.fetches))},
			{Issuer: w.b.Issuer(), Audience: []string{w.audB}, Keys: newJWKS(t, fetchedAs(w.b, w.fetches))},
		},
	})
	return w
}

// fetchedAs is how the two issuers' key sets are fetched: through the
// counting transport, nothing in the background, and no limit on the
// fetches an unknown kid may cause: a fetch the test sees is one Validate
// made.
func fetchedAs(j *jwktest.JWKS, fetches *countingTransport) accesstoken.JWKSConfig {
	return accesstoken.JWKSConfig{
		Issuer:            j.Issuer(),
		HTTPClient:        &http.Client{Transport: fetches},
		RefreshInterval:   time.Hour,
		RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1),
	}
}

// tokenA and tokenB are tokens as a and b issue them, with entries of
// kv set over the claims.
func (w *twoIssuers) tokenA(t *testing.T, kv ...any) string {
	return jwktest.Sign(t, w.ka, nil, jwktest.With(jwktest.Claims(w.a.Issuer(), scope.AdminWebAPI, time.Hour), kv...))
}

func (w *twoIssuers) tokenB(t *testing.T, kv ...any) string {
	claims := jwktest.With(jwktest.Claims(w.b.Issuer(), "", time.Hour), "aud", w.audB, "scope", []string{scope.AdminWebAPI, scope.ConnectWebAPI})
	return jwktest.Sign(t, w.kb, nil, jwktest.With(claims, kv...))
}

func newValidatorOf(t *testing.T, cfg accesstoken.Config) *accesstoken.Validator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := accesstoken.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestIssuersAcceptEachIssuersTokens(t *testing.T) {
	w := newTwoIssuers(t)
	ctx := context.Background()
	c, err := w.v.Validate(ctx, w.tokenA(t), accesstoken.Presentation{})
	if err != nil {
		t.Fatalf("a's token: %v", err)
	}
	if c.Issuer != w.a.Issuer() || !c.Scopes.Has(scope.AdminWebAPI) || len(c.Scopes) != 1 {
		t.Errorf("a's token: claims %+v", c)
	}
	c, err = w.v.Validate(ctx, w.tokenB(t), accesstoken.Presentation{})
	if err != nil {
		t.Fatalf("b's token: %v", err)
	}
	if c.Issuer != w.b.Issuer() || !c.Scopes.Has(scope.AdminWebAPI) || !c.Scopes.Has(scope.ConnectWebAPI) || len(c.Audience) != 1 || c.Audience[0] != w.audB {
		t.Errorf("b's token: claims %+v", c)
	}
}

// TestIssuersUnknownIssuerFetchesNothing: a token whose "iss" is on no
// list is refused before any key is looked up, so even with an unknown
// kid and no limit on refetches it fetches nothing, and the refusal
// reports no "iss", which did not verify.
func TestIssuersUnknownIssuerFetchesNothing(t *testing.T) {
	w := newTwoIssuers(t)
	stranger := jwktest.NewKey(t, "ES256")
	a := w.a.Issuer()
	cases := []struct {
		name   string
		claims map[string]any
		want   error
	}{
		{"another issuer", jwktest.Claims("https://evil.example/ids", scope.AdminWebAPI, time.Hour), accesstoken.ErrIssuer},
		{"a's issuer with a trailing slash", jwktest.Claims(a+"/", scope.AdminWebAPI, time.Hour), accesstoken.ErrIssuer},
		{"a's issuer in upper case", jwktest.Claims(strings.ToUpper(a), scope.AdminWebAPI, time.Hour), accesstoken.ErrIssuer},
		{"no iss", jwktest.With(jwktest.Claims(a, scope.AdminWebAPI, time.Hour), "iss", nil), accesstoken.ErrIssuer},
		{"ISS is not iss", jwktest.With(jwktest.Claims(a, scope.AdminWebAPI, time.Hour), "iss", nil, "ISS", a), accesstoken.ErrIssuer},
		{"empty iss", jwktest.Claims("", scope.AdminWebAPI, time.Hour), accesstoken.ErrIssuer},
		{"iss a number", jwktest.With(jwktest.Claims(a, scope.AdminWebAPI, time.Hour), "iss", 5), accesstoken.ErrMalformed},
		{"iss an array", jwktest.With(jwktest.Claims(a, scope.AdminWebAPI, time.Hour), "iss", []string{a}), accesstoken.ErrMalformed},
	}
	before, hitsA, hitsB := w.fetches.n.Load(), w.a.Hits(), w.b.Hits()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.v.Validate(context.Background(), jwktest.Sign(t, stranger, nil, c.claims), accesstoken.Presentation{})
			var ve *accesstoken.ValidationError
			if !errors.Is(err, c.want) || !errors.As(err, &ve) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if strings.Contains(err.Error(), "iss ") {
				t.Errorf("the error reports an iss that never verified: %v", err)
			}
		})
	}
	t.Run("a payload that is not JSON", func(t *testing.T) {
		if _, err := w.v.Validate(context.Background(), signPayload(t, stranger, `{"iss":`), accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrMalformed) {
			t.Fatalf("err = %v", err)
		}
	})
	if n := w.fetches.n.Load() - before; n != 0 {
		t.Errorf("%d requests for tokens of no trusted issuer, want 0", n)
	}
	if w.a.Hits() != hitsA || w.b.Hits() != hitsB {
		t.Errorf("JWKS fetched: a %d→%d, b %d→%d", hitsA, w.a.Hits(), hitsB, w.b.Hits())
	}
}

// TestIssuersKeysNeverCross: a token signed with a's key that names b as
// its issuer is checked with b's keys alone, and refused. With a's kid it
// is ErrUnknownKey: b's JWKS has no such kid (b's is fetched again, as an
// unknown kid does; a's never). Without a kid, or with a kid both issuers
// happen to use, it is ErrSignature: b's keys are tried and none
// verifies. Under the kid of b's RS256 key it is ErrAlgorithm.
func TestIssuersKeysNeverCross(t *testing.T) {
	w := newTwoIssuers(t)
	// A kid both publish, on different keys.
	sharedA, sharedB := *jwktest.NewKey(t, "ES256"), *jwktest.NewKey(t, "ES256")
	sharedA.KID, sharedB.KID = "key-1", "key-1"
	w.a.SetKeys(w.ka, &sharedA)
	w.b.SetKeys(w.kb, &sharedB)
	ctx := context.Background()
	aAsB := jwktest.Claims(w.b.Issuer(), scope.AdminWebAPI, time.Hour)
	aAsB["aud"] = w.audB
	bAsA := jwktest.Claims(w.a.Issuer(), scope.AdminWebAPI, time.Hour)
	// Both kids of key-1 are known once each issuer's JWKS is read again.
	if _, err := w.v.Validate(ctx, jwktest.Sign(t, &sharedA, nil, jwktest.Claims(w.a.Issuer(), scope.AdminWebAPI, time.Hour)), accesstoken.Presentation{}); err != nil {
		t.Fatalf("a's key-1 on a's token: %v", err)
	}
	if _, err := w.v.Validate(ctx, jwktest.Sign(t, &sharedB, nil, aAsB), accesstoken.Presentation{}); err != nil {
		t.Fatalf("b's key-1 on b's token: %v", err)
	}
	// iss a, then iss b: a claim set that names a member twice is
	// malformed, refused before any key is looked up.
	twice := `{"iss":"` + w.a.Issuer() + `","iss":"` + w.b.Issuer() + `","aud":"` + w.audB + `","exp":` + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10) + `}`
	cases := []struct {
		name   string
		tok    string
		signer *jwktest.JWKS // whose keys signed it: never asked
		want   error
	}{
		{"a's key and kid, iss b", jwktest.Sign(t, w.ka, nil, aAsB), w.a, accesstoken.ErrUnknownKey},
		{"a's key, no kid, iss b", jwktest.Sign(t, w.ka, map[string]any{"kid": nil}, aAsB), w.a, accesstoken.ErrSignature},
		{"a's ES256 key under b's RS256 kid, iss b", jwktest.Sign(t, w.ka, map[string]any{"kid": w.kb.KID}, aAsB), w.a, accesstoken.ErrAlgorithm},
		{"a's key-1, iss b, whose key-1 is another", jwktest.Sign(t, &sharedA, nil, aAsB), w.a, accesstoken.ErrSignature},
		{"a's key, iss a then iss b", signPayload(t, w.ka, twice), w.a, accesstoken.ErrMalformed},
		{"b's key and kid, iss a", jwktest.Sign(t, w.kb, nil, bAsA), w.b, accesstoken.ErrUnknownKey},
		{"b's key-1, iss a, whose key-1 is another", jwktest.Sign(t, &sharedB, nil, bAsA), w.b, accesstoken.ErrSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits := c.signer.Hits()
			if _, err := w.v.Validate(ctx, c.tok, accesstoken.Presentation{}); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if n := c.signer.Hits() - hits; n != 0 {
				t.Errorf("the signer's JWKS was fetched %d times", n)
			}
		})
	}
}

func TestIssuersAudiencePerIssuer(t *testing.T) {
	w := newTwoIssuers(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		tok  string
		want error
	}{
		{"a's token for a's audience", w.tokenA(t), nil},
		{"a's token for b's audience", w.tokenA(t, "aud", w.audB), accesstoken.ErrAudience},
		{"b's token for b's audience", w.tokenB(t), nil},
		{"b's token for a's audience", w.tokenB(t, "aud", w.audA), accesstoken.ErrAudience},
		{"b's token with no aud", w.tokenB(t, "aud", nil), accesstoken.ErrAudience},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.v.Validate(ctx, c.tok, accesstoken.Presentation{})
			if (c.want == nil && err != nil) || !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("AnyAudience for one issuer only", func(t *testing.T) {
		v := newValidatorOf(t, accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{
			{Issuer: w.a.Issuer(), Audience: []string{w.audA}},
			{Issuer: w.b.Issuer(), AnyAudience: true},
		}})
		if _, err := v.Validate(ctx, w.tokenB(t, "aud", "billing"), accesstoken.Presentation{}); err != nil {
			t.Fatalf("b, any audience: %v", err)
		}
		if _, err := v.Validate(ctx, w.tokenA(t, "aud", "billing"), accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrAudience) {
			t.Fatalf("a, its audience: err = %v", err)
		}
	})
}

func TestIssuersConfig(t *testing.T) {
	a, b := jwktest.NewJWKS(t, jwktest.NewKey(t, "ES256")), jwktest.NewJWKS(t, jwktest.NewKey(t, "ES256"))
	good := accesstoken.TrustedIssuer{Issuer: a.Issuer(), Audience: []string{"api"}}
	in := newCountingKeys()
	cases := []struct {
		name string
		cfg  accesstoken.Config
		want string // in the error
	}{
		{"discovery naming another issuer", accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{good, {Issuer: b.Issuer() + "/", Audience: []string{"api"}}}}, "names issuer"},
		{"unreachable discovery", accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{good, {Issuer: b.Issuer() + "/nowhere", Audience: []string{"api"}}}}, "discovery"},
		{"an issuer twice", accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{good, {Issuer: a.Issuer(), AnyAudience: true}}}, `Issuers[1].Issuer "` + a.Issuer() + `" is Issuers[0]'s too`},
		{"an issuer without a name", accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{good, {Audience: []string{"api"}}}}, "Issuers[1].Issuer is required"},
		{"an issuer without an audience", accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{good, {Issuer: b.Issuer()}}}, "Issuers[1].Audience is required"},
		{"Audience and AnyAudience", accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{{Issuer: a.Issuer(), Audience: []string{"api"}, AnyAudience: true}}}, "Issuers[0].Audience and AnyAudience"},
		{"Issuers and Issuer", accesstoken.Config{Issuer: a.Issuer(), Issuers: []accesstoken.TrustedIssuer{good}}, "Issuers cannot be combined with Issuer"},
		{"Issuers and Audience", accesstoken.Config{Audience: []string{"api"}, Issuers: []accesstoken.TrustedIssuer{good}}, "Issuers cannot be combined with Audience"},
		{"Issuers and Keys", accesstoken.Config{Keys: in, Issuers: []accesstoken.TrustedIssuer{good}}, "Issuers cannot be combined with Keys"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := accesstoken.New(context.Background(), c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
	t.Run("one issuer that fetches and one in process", func(t *testing.T) {
		newValidatorOf(t, accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{good, {Issuer: iss, Keys: in, AnyAudience: true}}})
	})
}

// TestIssuersCacheIsPerIssuer: each issuer's cached tokens follow that
// issuer's keys alone, and an issuer whose keys have no version has its
// tokens validated in full every time while the others' are cached.
func TestIssuersCacheIsPerIssuer(t *testing.T) {
	ka, kb, kc := jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "ES256")
	srcA, srcB, srcC := newCountingKeys(ka), newCountingKeys(kb), newCountingKeys(kc)
	const a, b, c = "https://a.example/ids", "https://b.example/ids", "https://c.example/ids"
	v := newValidatorOf(t, accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{
		{Issuer: a, Keys: srcA, AnyAudience: true},
		{Issuer: b, Keys: srcB, AnyAudience: true},
		{Issuer: c, Keys: unversioned{srcC}, AnyAudience: true},
	}})
	tokA := jwktest.Sign(t, ka, nil, jwktest.Claims(a, scope.AdminWebAPI, time.Hour))
	tokB := jwktest.Sign(t, kb, nil, jwktest.Claims(b, scope.AdminWebAPI, time.Hour))
	tokC := jwktest.Sign(t, kc, nil, jwktest.Claims(c, scope.AdminWebAPI, time.Hour))
	validate := func(toks ...string) {
		t.Helper()
		for _, tok := range toks {
			if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	lookups := func() [3]int64 { return [3]int64{srcA.lookups.Load(), srcB.lookups.Load(), srcC.lookups.Load()} }
	validate(tokA, tokB, tokC, tokA, tokB, tokC)
	if got := lookups(); got != [3]int64{1, 1, 2} {
		t.Fatalf("lookups of a, b, c = %v, want [1 1 2]: a's and b's cached, c's never", got)
	}
	srcA.set(ka) // a's keys change (here to the same set, under a new version)
	validate(tokA, tokB, tokA, tokB)
	if got := lookups(); got != [3]int64{2, 1, 2} {
		t.Fatalf("after a's keys changed, lookups of a, b, c = %v, want [2 1 2]: b's tokens stay cached", got)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = v.Validate(context.Background(), tokB, accesstoken.Presentation{}) }); n != 0 {
		t.Fatalf("%v allocations per cached validation with several issuers, want 0", n)
	}
}

// TestIssuersOfOneStillChoose: a list of one issuer and
// Config.Issuer read "iss" before the keys as a longer list
// does: another issuer's token, even signed by the trusted key, looks up
// no key.
func TestIssuersOfOneStillChoose(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	src := newCountingKeys(k)
	list := newValidatorOf(t, accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{{Issuer: iss, Keys: src, AnyAudience: true}}})
	one := newValidatorOf(t, accesstoken.Config{Issuer: iss, Keys: src, AnyAudience: true})
	other := jwktest.Sign(t, k, nil, jwktest.Claims("https://other.example/ids", scope.AdminWebAPI, time.Hour))
	for _, c := range []struct {
		name    string
		v       *accesstoken.Validator
		lookups int64
	}{{"Issuers", list, 0}, {"Issuer", one, 0}} {
		before := src.lookups.Load()
		if _, err := c.v.Validate(context.Background(), other, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrIssuer) {
			t.Fatalf("%s: err = %v", c.name, err)
		}
		if n := src.lookups.Load() - before; n != c.lookups {
			t.Errorf("%s: %d key lookups for another issuer's token, want %d", c.name, n, c.lookups)
		}
	}
}

// FuzzValidateIssuers feeds arbitrary tokens to a validator of two
// issuers. It must never panic, and it may accept a token only if the
// token verifies, independently of the validator, with the key of the
// issuer that Claims names, and names that issuer in its "iss".
func FuzzValidateIssuers(f *testing.F) {
	const a, b = "https://a.example/ids", "https://b.example/ids"
	ka, err := keys.Generate("ES256")
	if err != nil {
		f.Fatal(err)
	}
	kb, err := keys.Generate("ES256")
	if err != nil {
		f.Fatal(err)
	}
	claimsA, claimsB := jwktest.Claims(a, scope.AdminWebAPI, 24*time.Hour), jwktest.Claims(b, scope.AdminWebAPI, 24*time.Hour)
	f.Add(jwktest.Sign(f, ka, nil, claimsA))
	f.Add(jwktest.Sign(f, kb, nil, claimsB))
	f.Add(jwktest.Sign(f, ka, nil, claimsB))
	f.Add(jwktest.Sign(f, ka, map[string]any{"kid": kb.KID}, claimsB))
	f.Add(jwktest.Sign(f, ka, nil, jwktest.With(claimsA, "iss", []string{a})))
	f.Add(jwktest.Segment(map[string]any{"alg": "ES256"}) + "." + jwktest.Segment(`{"iss":"`+a+`","iss":"`+b+`"}`) + ".AA")
	f.Add("a.b.c")
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{
		{Issuer: a, Audience: []string{a + "/resources"}, Keys: newCountingKeys(ka)},
		{Issuer: b, Audience: []string{b + "/resources"}, Keys: newCountingKeys(kb)},
	}})
	if err != nil {
		f.Fatal(err)
	}
	pub := map[string]crypto.PublicKey{a: ka.Public(), b: kb.Public()}
	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Validate(context.Background(), token, accesstoken.Presentation{})
		if err != nil {
			if c != nil {
				t.Fatal("claims with an error")
			}
			return
		}
		var mc jwt.MapClaims
		if _, perr := jwt.ParseWithClaims(token, &mc, func(*jwt.Token) (any, error) { return pub[c.Issuer], nil }, jwt.WithValidMethods([]string{"ES256"})); perr != nil {
			t.Fatalf("accepted for %s a token its key does not verify: %v", c.Issuer, perr)
		}
		if mc["iss"] != c.Issuer {
			t.Fatalf("accepted for %s a token whose iss is %v", c.Issuer, mc["iss"])
		}
	})
}

// TestForeignIssuerSpendsNoRefetch: with one trusted issuer, as with
// several, a token naming another issuer is refused as such ("token issuer
// not accepted") before any key is looked up. A second Hydra's token, with
// a kid the trusted JWKS lacks, fetches nothing, so the unknown-kid
// refetch is still there when a token signed by the trusted issuer's
// brand-new key comes a moment later (issue 23, row 14: the foreign token
// spent it, and the new key was refused until the next refresh).
func TestForeignIssuerSpendsNoRefetch(t *testing.T) {
	k := jwktest.NewKey(t, "RS256")
	trusted := jwktest.NewJWKS(t, k)
	v := newValidator(t, accesstoken.Config{
		Issuer: trusted.Issuer(),
		// No refresh in the background, and one refetch an hour on an
		// unknown kid (the default is one per 30 s): every fetch the test
		// counts is one a token caused.
		Keys: newJWKS(t, accesstoken.JWKSConfig{
			Issuer:            trusted.Issuer(),
			RefreshInterval:   time.Hour,
			RefreshUnknownKID: rate.NewLimiter(rate.Every(time.Hour), 1),
		}),
	})
	ctx := context.Background()
	hits := trusted.Hits()

	other := jwktest.NewKey(t, "RS256")
	foreign := jwktest.Sign(t, other, map[string]any{"typ": "JWT"},
		jwktest.With(jwktest.Claims("https://hydra-b.example/", scope.AdminWebAPI, time.Hour), "aud", trusted.Issuer()+"/resources"))
	_, err := v.Validate(ctx, foreign, accesstoken.Presentation{})
	var ve *accesstoken.ValidationError
	if !errors.As(err, &ve) || ve.Code != "issuer" || !errors.Is(err, accesstoken.ErrIssuer) || strings.Contains(err.Error(), "hydra-b") {
		t.Errorf("foreign token: err = %v, want ErrIssuer, naming no issuer (it never verified)", err)
	}
	if n := trusted.Hits() - hits; n != 0 {
		t.Errorf("the foreign token caused %d JWKS fetches, want 0", n)
	}

	next := jwktest.NewKey(t, "RS256")
	trusted.SetKeys(k, next)
	if _, err := v.Validate(ctx, jwktest.Sign(t, next, nil, jwktest.Claims(trusted.Issuer(), scope.AdminWebAPI, time.Hour)), accesstoken.Presentation{}); err != nil {
		t.Fatalf("the trusted issuer's new key after a foreign token: %v", err)
	}
	if n := trusted.Hits() - hits; n != 1 {
		t.Errorf("%d JWKS fetches, want 1: the new key's", n)
	}
}
