package issuer

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/keys"
)

// accessClaims and signGolangJWT are how tokens were signed before
// sign.go wrote them by hand: golang-jwt with a header map and a claims
// struct through encoding/json. They stay here as the reference.
type accessClaims struct {
	Issuer    string   `json:"iss"`
	Subject   string   `json:"sub"`
	ClientID  string   `json:"client_id"`
	Audience  []string `json:"aud"`
	Scope     any      `json:"scope"`
	IssuedAt  int64    `json:"iat"`
	NotBefore int64    `json:"nbf"`
	Expires   int64    `json:"exp"`
	ID        string   `json:"jti"`
}

func (c accessClaims) GetExpirationTime() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.Expires, 0)), nil
}
func (c accessClaims) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.IssuedAt, 0)), nil
}
func (c accessClaims) GetNotBefore() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.NotBefore, 0)), nil
}
func (c accessClaims) GetIssuer() (string, error)             { return c.Issuer, nil }
func (c accessClaims) GetSubject() (string, error)            { return c.Subject, nil }
func (c accessClaims) GetAudience() (jwt.ClaimStrings, error) { return c.Audience, nil }

func signGolangJWT(t *testing.T, st *state, cl *client, granted, aud []string, now time.Time, jti string) string {
	t.Helper()
	var sc any = strings.Join(granted, " ")
	if st.scopeArray {
		sc = granted
	}
	tok := &jwt.Token{
		Header: map[string]any{"alg": st.signer.Alg, "typ": "at+jwt", "kid": st.signer.KID},
		Claims: accessClaims{
			Issuer: st.issuer, Subject: cl.id, ClientID: cl.id, Audience: aud, Scope: sc,
			IssuedAt: now.Unix(), NotBefore: now.Unix(), Expires: now.Add(cl.lifetime).Unix(), ID: jti,
		},
		Method: st.method,
	}
	s, err := tok.SignedString(st.signer.Private)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// oddText holds what JSON must escape: quote, backslash, controls, HTML
// characters, U+2028/U+2029, non-ASCII and invalid UTF-8.
var oddText = []string{
	"plain-client",
	`we"ird\client`,
	"<script>&amp;</script>",
	"tab\tnl\ncr\r\x00\x1f\x7f",
	"é漢🔑\u2028\u2029",
	"bad\xff\xfeutf8\xc3",
}

// TestSignMatchesGolangJWT: a token signed by sign verifies with
// golang-jwt and has the very header and claims bytes that golang-jwt
// made from the header map and the claims struct; with a deterministic
// signature (RS256, EdDSA), the whole token is the same. So for the
// prefix made ahead for a client's own audience, and for one made on the
// spot for resources asked for.
func TestSignMatchesGolangJWT(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, alg := range []string{"ES256", "RS256", "PS256", "EdDSA"} {
		k, err := keys.Generate(alg)
		if err != nil {
			t.Fatal(err)
		}
		for i, odd := range oddText {
			for _, scopeArray := range []bool{false, true} {
				cases := []struct{ granted, aud []string }{
					{[]string{"pd_AdminWebApi"}, []string{"https://api.example/" + odd}},
					{[]string{"a", odd, "c"}, []string{odd, "urn:x", oddText[(i+1)%len(oddText)]}},
					{nil, nil},
				}
				for _, c := range cases {
					for _, own := range []bool{true, false} {
						cl := &client{clientData: clientData{id: odd, lifetime: 90 * time.Minute, audience: []string{"urn:its-own"}}}
						if own {
							cl.audience = c.aud
						}
						st := &state{face: &face{issuer: "https://id.example/" + odd, scopeArray: scopeArray}, keySet: keySet{signer: k, method: jwt.GetSigningMethod(alg), header: encodedHeader(k)}}
						// Twice in one second (the second from the first's
						// start, for the client's own audience), then the
						// next second.
						for _, at := range []time.Time{now, now.Add(999 * time.Millisecond), now.Add(time.Second)} {
							before := lastStart(cl)
							got, err := st.sign([]byte("before"), cl, c.granted, c.aud, at)
							if err != nil {
								t.Fatalf("%s: %v", alg, err)
							}
							tok, ok := strings.CutPrefix(string(got), "before")
							if !ok {
								t.Fatalf("%s: sign did not append: %q", alg, got)
							}
							checkToken(t, st, cl, c.granted, c.aud, at, tok)
							after := lastStart(cl)
							reused := before != nil && before == after
							if wantReuse := own && at.Unix() == now.Unix() && before != nil; reused != wantReuse || (after != nil) != own {
								t.Fatalf("%s at %v: start reused %v, kept %v; own audience %v", alg, at, reused, after != nil, own)
							}
						}
					}
				}
			}
		}
	}
}

func checkToken(t *testing.T, st *state, cl *client, granted, aud []string, now time.Time, got string) {
	t.Helper()
	alg := st.signer.Alg
	parsed, err := jwt.Parse(got, func(*jwt.Token) (any, error) { return st.signer.Public(), nil },
		jwt.WithValidMethods([]string{alg}), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil || !parsed.Valid {
		t.Fatalf("%s: golang-jwt refuses the token: %v", alg, err)
	}
	var jti struct {
		ID string `json:"jti"`
	}
	parts := strings.Split(got, ".")
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(claims, &jti) != nil || len(jti.ID) != 26 {
		t.Fatalf("%s: claims %s, jti %q: %v", alg, claims, jti.ID, err)
	}
	want := signGolangJWT(t, st, cl, granted, aud, now, jti.ID)
	wantParts := strings.Split(want, ".")
	if parts[0] != wantParts[0] {
		t.Errorf("%s: header %s, golang-jwt's %s", alg, decode(t, parts[0]), decode(t, wantParts[0]))
	}
	if parts[1] != wantParts[1] {
		t.Errorf("%s: claims\n%s\ngolang-jwt's\n%s", alg, claims, decode(t, wantParts[1]))
	}
	if (alg == "RS256" || alg == "EdDSA") && got != want {
		t.Errorf("%s: the signature differs from golang-jwt's", alg)
	}
	// The same claims decoded, whatever the bytes.
	var a, b map[string]any
	if json.Unmarshal(claims, &a) != nil || json.Unmarshal([]byte(decode(t, wantParts[1])), &b) != nil || !reflect.DeepEqual(a, b) {
		t.Errorf("%s: decoded claims %v, golang-jwt's %v", alg, a, b)
	}
	if a["client_id"] != string([]rune(cl.id)) {
		t.Errorf("%s: client_id %q for %q", alg, a["client_id"], cl.id)
	}
}

func decode(t *testing.T, seg string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSignHedgedES256: ES256 signatures of one input differ (a random
// nonce, not RFC 6979's deterministic one) and each verifies.
func TestSignHedgedES256(t *testing.T) {
	k, err := keys.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	st := &state{face: &face{}, keySet: keySet{signer: k, method: jwt.GetSigningMethod("ES256"), header: encodedHeader(k)}}
	p := st.newPrefix(&client{clientData: clientData{id: "c"}}, nil)
	input := string(p.encoded) + base64.RawURLEncoding.EncodeToString([]byte(`"s","iat":1}`))
	seen := map[string]bool{}
	for range 8 {
		sig, err := st.signature(nil, []byte(input), &p.signingStart)
		if err != nil {
			t.Fatal(err)
		}
		if err := jwt.SigningMethodES256.Verify(input, sig, k.Public()); err != nil {
			t.Fatal(err)
		}
		seen[string(sig)] = true
	}
	if len(seen) != 8 {
		t.Fatalf("8 signatures of one input, %d different", len(seen))
	}
}

// TestAppendRawES256 pads short integers and refuses what is not a
// signature.
func TestAppendRawES256(t *testing.T) {
	// SEQUENCE { INTEGER 1, INTEGER 0x00ff (a leading zero for the sign) }
	got, err := appendRawES256([]byte("x"), []byte{0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x02, 0x00, 0xff})
	want := append([]byte("x"), make([]byte, 64)...)
	want[32], want[64] = 1, 0xff
	if err != nil || string(got) != string(want) {
		t.Fatalf("got %x %v, want %x", got, err, want)
	}
	for _, der := range [][]byte{
		nil,
		{0x30, 0x03, 0x02, 0x01, 0x01}, // one integer
		{0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x80},            // negative s
		append([]byte{0x30, 0x26, 0x02, 0x21}, make([]byte, 36)...), // r of 33 bytes
		{0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00},      // trailing byte
	} {
		if _, err := appendRawES256(nil, der); err == nil {
			t.Errorf("%x accepted", der)
		}
	}
}

// tokenResponse is the success answer of the token endpoint (RFC 6749
// §5.1), as encoding/json writes it: the reference for appendAnswer.
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

// TestAnswerIsWriteJSON: the success answer is what oauthwire.WriteJSON
// wrote for the same response, and its token verifies.
func TestAnswerIsWriteJSON(t *testing.T) {
	k, err := keys.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	st := &state{face: &face{issuer: "https://id.example"}, keySet: keySet{signer: k, method: jwt.GetSigningMethod("ES256"), header: encodedHeader(k)}}
	now := time.Unix(1_800_000_000, 0)
	for _, odd := range oddText {
		cl := &client{clientData: clientData{id: "c", lifetime: time.Hour}}
		granted := []string{"a", odd}
		got, err := st.appendAnswer(nil, cl, granted, nil, now, cnf{})
		if err != nil {
			t.Fatal(err)
		}
		var resp tokenResponse
		if err := json.Unmarshal(got, &resp); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		want, err := json.Marshal(tokenResponse{AccessToken: resp.AccessToken, TokenType: "Bearer", ExpiresIn: 3600, Scope: "a " + odd})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("answer %s, json.Marshal %s", got, want)
		}
		checkToken(t, st, cl, granted, nil, now, resp.AccessToken)
	}
}

// TestAppendJTI: token IDs are 26 characters of the base32 alphabet and
// do not repeat, across many refills of the random blocks.
func TestAppendJTI(t *testing.T) {
	seen := map[string]bool{}
	for range 5000 {
		jti := string(appendJTI(nil))
		if len(jti) != 26 || strings.Trim(jti, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
			t.Fatalf("jti %q", jti)
		}
		if seen[jti] {
			t.Fatalf("jti %q repeats", jti)
		}
		seen[jti] = true
	}
}

// TestTokenStartFollowsTheGrant: tokens of one client in one second, for
// scopes that change from one token to the next and from goroutines at
// once, each carry their own scopes, in the token and in the answer.
func TestTokenStartFollowsTheGrant(t *testing.T) {
	k, err := keys.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	cl := &client{clientData: clientData{id: "c", lifetime: time.Hour, audience: []string{"urn:api"}}}
	st := &state{face: &face{issuer: "https://id.example"}, keySet: keySet{signer: k, method: jwt.GetSigningMethod("ES256"), header: encodedHeader(k)}}
	now := time.Unix(1_800_000_000, 0)
	grants := [][]string{{"a"}, {"b"}, {"a", "b"}, {"a"}}
	for _, g := range grants {
		tok, err := st.sign(nil, cl, g, cl.audience, now)
		if err != nil {
			t.Fatal(err)
		}
		checkToken(t, st, cl, g, cl.audience, now, string(tok))
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				g := grants[(i+j)%len(grants)]
				answer, err := st.appendAnswer(nil, cl, g, cl.audience, now.Add(time.Duration(j%3)*time.Second), cnf{})
				if err != nil {
					t.Error(err)
					return
				}
				var resp tokenResponse
				if err := json.Unmarshal(answer, &resp); err != nil || resp.Scope != strings.Join(g, " ") {
					t.Errorf("answer %s for %q", answer, g)
					return
				}
				claims, err := base64.RawURLEncoding.DecodeString(strings.Split(resp.AccessToken, ".")[1])
				var c struct {
					Scope string `json:"scope"`
					IAT   int64  `json:"iat"`
				}
				if err != nil || json.Unmarshal(claims, &c) != nil || c.Scope != resp.Scope || c.IAT != now.Unix()+int64(j%3) {
					t.Errorf("claims %s for %q at +%ds", claims, g, j%3)
					return
				}
			}
		})
	}
	wg.Wait()
}

// lastStart is the tokenStart cl's prefix keeps: nil before its first
// token for its own audience.
func lastStart(cl *client) *tokenStart {
	if p := cl.prefix.Load(); p != nil {
		return p.last.Load()
	}
	return nil
}
