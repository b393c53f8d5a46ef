package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/scope"
)

// inProcess is the example service's handler on a loopback server, with
// its key known to the test and its log captured at debug level.
type inProcess struct {
	*httptest.Server
	key  *keys.Key
	logs *testlog.Buffer
	svc  *service
}

func (s *inProcess) issuer() string { return s.URL + "/ids" }

func newInProcess(t *testing.T) *inProcess {
	t.Helper()
	return newInProcessLimits(t, nil)
}

// newInProcessLimits is newInProcess with the configuration's "limits".
func newInProcessLimits(t *testing.T, limits map[string]any) *inProcess {
	t.Helper()
	dir := t.TempDir()
	k := jwktest.NewKey(t, "ES256")
	writeConfigLimits(t, dir, limits, writeKey(t, dir, "k.pem", k))
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	logs, logger := testlog.New()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	svc, err := newService(ctx, configSource{file: filepath.Join(dir, "config.json"), issuer: srv.URL + "/ids"}, logger)
	if err != nil {
		t.Fatal(err)
	}
	h = svc.routes()
	return &inProcess{Server: srv, key: k, logs: logs, svc: svc}
}

// expectation is the answer's shape, from CONTRACT.md.
type expectation struct {
	status int
	kind   string // challenge, invalid_token, invalid_request, insufficient_scope, scim, scimlist, oauth, problem, ok
	code   string // the OAuth error code, for kind oauth; the scimType, for kind scim
	desc   string // error_description, when it is pinned
}

var (
	okWant        = expectation{status: 200, kind: "ok"}
	challengeWant = expectation{status: 401, kind: "challenge"}
	scimWant      = expectation{status: 401, kind: "scim"}
	scimListWant  = expectation{status: 200, kind: "scimlist"}
	invalidValue  = expectation{status: 400, kind: "scim", code: "invalidValue"}
)

func invalid(desc string) expectation {
	return expectation{status: 401, kind: "invalid_token", desc: desc}
}

func oauthErr(status int, code string) expectation {
	return expectation{status: status, kind: "oauth", code: code}
}

// metadataParam is the resource_metadata parameter (RFC 9728) of the
// example service's challenges to a call of path: the metadata of the URL
// called, on the service's own origin.
func metadataParam(path string) *regexp.Regexp {
	return regexp.MustCompile(`, resource_metadata="http://127\.0\.0\.1:[0-9]+/\.well-known/oauth-protected-resource` + regexp.QuoteMeta(path) + `"$`)
}

// bareChallenges reports whether chs are the example service's answer to
// a request of path without a token: a bare Bearer challenge and a bare
// DPoP one (the APIs take both), each naming the metadata of the URL
// called, nothing else.
func bareChallenges(chs []string, path string) bool {
	param := metadataParam(path)
	if len(chs) != 2 || !param.MatchString(chs[0]) || !param.MatchString(chs[1]) {
		return false
	}
	return param.ReplaceAllString(chs[0], "") == `Bearer realm="idsauth"` &&
		param.ReplaceAllString(chs[1], "") == `DPoP realm="idsauth", algs="ES256 RS256 PS256 EdDSA Ed25519"`
}

func (e expectation) check(t *testing.T, r reply) {
	t.Helper()
	if r.status != e.status {
		t.Fatalf("status = %d, want %d; body %q; WWW-Authenticate %q", r.status, e.status, r.body, r.header.Get("WWW-Authenticate"))
	}
	var m map[string]any
	isJSON := json.Unmarshal([]byte(r.body), &m) == nil
	challenge := r.header.Get("WWW-Authenticate")
	switch e.kind {
	case "ok":
	case "challenge":
		if !bareChallenges(r.header.Values("WWW-Authenticate"), r.path) || isJSON {
			t.Fatalf("want a bare challenge, got %q and body %q", r.header.Values("WWW-Authenticate"), r.body)
		}
	case "invalid_token", "invalid_request", "insufficient_scope":
		if !isJSON || m["error"] != e.kind || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("body %q", r.body)
		}
		if e.desc != "" && m["error_description"] != e.desc {
			t.Fatalf("error_description = %q, want %q", m["error_description"], e.desc)
		}
		if !strings.HasPrefix(challenge, `Bearer realm="idsauth", error="`+e.kind+`"`) {
			t.Fatalf("WWW-Authenticate = %q", challenge)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Fatal("no Cache-Control: no-store")
		}
	case "scim":
		if !isJSON || m["status"] != strconv.Itoa(e.status) || r.header.Get("Content-Type") != "application/scim+json" {
			t.Fatalf("want a SCIM %d error, got %q", e.status, r.body)
		}
		if e.status == 401 && challenge != `Bearer realm="scim"` {
			t.Fatalf("WWW-Authenticate = %q", challenge)
		}
		if e.code != "" && m["scimType"] != e.code {
			t.Fatalf("scimType = %v, want %q", m["scimType"], e.code)
		}
	case "scimlist":
		var list struct {
			Schemas      []string
			ItemsPerPage int
			Resources    []json.RawMessage
		}
		if json.Unmarshal([]byte(r.body), &list) != nil || r.header.Get("Content-Type") != "application/scim+json" ||
			len(list.Schemas) != 1 || list.Schemas[0] != listSchema || list.ItemsPerPage != len(list.Resources) || list.ItemsPerPage > scimMaxResults {
			t.Fatalf("want a SCIM list, got %q", r.body)
		}
	case "oauth":
		if !isJSON || m["error"] != e.code || r.header.Get("Cache-Control") != "no-store" || r.header.Get("Pragma") != "no-cache" {
			t.Fatalf("want OAuth error %q, got %q", e.code, r.body)
		}
	case "problem":
		if r.header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("want a problem body, got %q", r.body)
		}
	default:
		t.Fatalf("unknown kind %q", e.kind)
	}
}

// TestHostileInput sends attacks at the example service over real HTTP and
// checks each answer against CONTRACT.md; none may be a 5xx or echo a
// token or a secret, and the debug log of the whole run holds neither.
func TestHostileInput(t *testing.T) {
	// The assertion rows fail for one client more often than the default
	// budget allows in a minute; the limits have tests of their own.
	s := newInProcessLimits(t, map[string]any{"failedAttemptsPerClient": 50})
	k := s.key
	attacker := jwktest.NewKey(t, "ES256")
	var fetched atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fetched.Add(1) }))
	defer elsewhere.Close()

	claims := jwktest.Claims(s.issuer(), scope.AdminWebAPI, time.Hour)
	sign := func(header map[string]any, c map[string]any) string { return jwktest.Sign(t, k, header, c) }
	seg := jwktest.Segment
	valid := sign(nil, claims)
	parts := strings.Split(valid, ".")
	hs256 := func(keyBytes []byte) string {
		in := seg(map[string]any{"alg": "HS256", "typ": "at+jwt", "kid": k.KID}) + "." + seg(claims)
		mac := hmac.New(sha256.New, keyBytes)
		mac.Write([]byte(in))
		return in + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	}
	der, _ := x509.MarshalPKIXPublicKey(k.Public())
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	rawPayload := func(payload string) string {
		// A payload written by hand, signed with the service's key.
		h := seg(map[string]any{"alg": "ES256", "typ": "at+jwt", "kid": k.KID})
		return signRaw(t, k, h, base64.RawURLEncoding.EncodeToString([]byte(payload)))
	}
	now := time.Now().Unix()
	base := `"iss":"` + s.issuer() + `","aud":"` + s.issuer() + `/resources","sub":"c","client_id":"c","iat":` + itoa(now) + `,"nbf":` + itoa(now)
	later := itoa(now + 3600)
	// A token with a valid signature, 940 KiB long (base64 of 705 KiB).
	huge := sign(nil, jwktest.With(claims, "pad", strings.Repeat("p", 940<<10*3/4)))
	if len(huge) < 940<<10 {
		t.Fatalf("the huge token is only %d bytes", len(huge))
	}

	api := s.URL + "/webapi/api/v3/demo"
	admin := api + "/Admin/Users"
	scimUsers := s.URL + "/webapi/scim-api/v1/acme/scim/Users"
	tokenURL := s.URL + "/ids/connect/token"
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	formPost := func(body string, extra ...string) func() *http.Request {
		return func() *http.Request {
			r, _ := http.NewRequest("POST", tokenURL, strings.NewReader(body))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for i := 0; i+1 < len(extra); i += 2 {
				r.Header.Add(extra[i], extra[i+1])
			}
			return r
		}
	}
	get := func(u string, header ...string) func() *http.Request {
		return func() *http.Request {
			r, _ := http.NewRequest("GET", u, nil)
			for i := 0; i+1 < len(header); i += 2 {
				r.Header.Add(header[i], header[i+1])
			}
			return r
		}
	}
	for i := range 3 { // paging rows need users on both sides of a window
		if r := send(t, http.DefaultClient, "POST", scimUsers, `{"userName":"user`+strconv.Itoa(i)+`"}`, "Authorization", "Bearer acme-scim-token"); r.status != 201 {
			t.Fatalf("SCIM create: %d %s", r.status, r.body)
		}
	}
	scimGet := func(query string) func() *http.Request {
		return get(scimUsers+"?"+query, "Authorization", "Bearer acme-scim-token")
	}
	payments, err := (&clientcredentials.Config{ClientID: "payments", ClientSecret: "payments-secret", TokenURL: tokenURL, Scopes: []string{scope.AdminWebAPI}}).Token(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	good := url.Values{"grant_type": {"client_credentials"}, "client_id": {"admin"}, "client_secret": {"admin-secret"}, "scope": {scope.AdminWebAPI}}

	// private_key_jwt: assertions of the keyed client, signed by its key
	// unless said otherwise.
	keyed := keyedKey()
	assertion := func(k *keys.Key, header, over map[string]any) string {
		c := map[string]any{"iss": "keyed", "sub": "keyed", "aud": tokenURL, "iat": now, "exp": now + 60, "jti": rand.Text()}
		for name, v := range over {
			if v == nil {
				delete(c, name)
			} else {
				c[name] = v
			}
		}
		h := map[string]any{"typ": "JWT", "kid": keyed.KID}
		maps.Copy(h, header)
		return jwktest.Sign(t, k, h, c)
	}
	asForm := func(as string, kv ...string) string {
		return withForm(url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {as}, "scope": {scope.AdminWebAPI}}, kv...)
	}
	validAssertion := assertion(keyed, nil, nil)
	claimsSeg := strings.Split(assertion(keyed, nil, nil), ".")[1]
	keyedPEM := func() []byte {
		der, _ := x509.MarshalPKIXPublicKey(keyed.Public())
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}()
	hsAssertion := func() string {
		in := seg(map[string]any{"alg": "HS256", "kid": keyed.KID}) + "." + claimsSeg
		mac := hmac.New(sha256.New, keyedPEM)
		mac.Write([]byte(in))
		return in + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	}
	badClient := oauthErr(401, "invalid_client")

	cases := []struct {
		name  string
		req   func() *http.Request
		want  expectation
		token string // must not be echoed
	}{
		{"baseline: a valid token", get(admin, bearer(valid)...), okWant, ""},
		{"alg none, empty signature", get(admin, bearer(seg(map[string]any{"alg": "none", "typ": "at+jwt"})+"."+parts[1]+".")...), invalid("token signing algorithm not allowed"), ""},
		{"alg none with a signature", get(admin, bearer(seg(map[string]any{"alg": "none"})+"."+parts[1]+"."+parts[2])...), invalid("token signing algorithm not allowed"), ""},
		{"alg NONE", get(admin, bearer(seg(map[string]any{"alg": "NONE"})+"."+parts[1]+".")...), invalid("token signing algorithm not allowed"), ""},
		{"HS256 keyed with the public key PEM", get(admin, bearer(hs256(pemBytes))...), invalid("token signing algorithm not allowed"), ""},
		{"HS256 keyed with the public key DER", get(admin, bearer(hs256(der))...), invalid("token signing algorithm not allowed"), ""},
		{"alg unknown", get(admin, bearer(seg(map[string]any{"alg": "XS999", "kid": k.KID})+"."+parts[1]+"."+parts[2])...), invalid("token signing algorithm not allowed"), ""},
		{"kid path traversal", get(admin, bearer(sign(map[string]any{"kid": "../../../../etc/passwd"}, claims))...), invalid("unknown signing key"), ""},
		{"kid SQL", get(admin, bearer(sign(map[string]any{"kid": "' OR '1'='1' --"}, claims))...), invalid("unknown signing key"), ""},
		{"kid of 10 KB", get(admin, bearer(sign(map[string]any{"kid": strings.Repeat("k", 10<<10)}, claims))...), invalid("unknown signing key"), ""},
		{"kid as a number", get(admin, bearer(sign(map[string]any{"kid": 7}, claims))...), invalid("token is malformed"), ""},
		{"jku pointing elsewhere", get(admin, bearer(jwktest.Sign(t, attacker, map[string]any{"jku": elsewhere.URL}, claims))...), invalid("unknown signing key"), ""},
		{"x5u pointing elsewhere", get(admin, bearer(jwktest.Sign(t, attacker, map[string]any{"x5u": elsewhere.URL}, claims))...), invalid("unknown signing key"), ""},
		{"embedded jwk of the attacker, no kid", get(admin, bearer(jwktest.Sign(t, attacker, map[string]any{"jwk": attacker.PublicJWK(), "kid": nil}, claims))...), invalid("unknown signing key"), ""},
		{"our kid, attacker's signature", get(admin, bearer(jwktest.Sign(t, attacker, map[string]any{"kid": k.KID}, claims))...), invalid("signature invalid"), ""},
		{"crit header", get(admin, bearer(sign(map[string]any{"crit": []string{"b64"}, "b64": false}, claims))...), invalid("token has critical header parameters that are not supported"), ""},
		{"nested JWS", get(admin, bearer(rawPayload(valid))...), invalid("token is malformed"), ""},
		{"JWE compact form", get(admin, bearer(seg(map[string]any{"alg": "RSA-OAEP", "enc": "A256GCM"})+".a.b.c.d")...), invalid("token is malformed"), ""},
		{"4 segments", get(admin, bearer(valid+".x")...), invalid("token is malformed"), ""},
		{"6 segments", get(admin, bearer(valid+".x.y.z")...), invalid("token is malformed"), ""},
		{"non-base64url characters", get(admin, bearer(strings.ReplaceAll(valid, "-", "+")+"+/")...), invalid(""), ""},
		{"base64 padding", get(admin, bearer(parts[0]+"=."+parts[1]+"."+parts[2])...), invalid("token is malformed"), ""},
		{"huge numeric exp", get(admin, bearer(rawPayload(`{`+base+`,"exp":1e300,"scope":"pd_AdminWebApi"}`))...), invalid(""), ""},
		{"exp as a string", get(admin, bearer(rawPayload(`{`+base+`,"exp":"tomorrow","scope":"pd_AdminWebApi"}`))...), invalid("token is malformed"), ""},
		{"exp missing", get(admin, bearer(sign(nil, jwktest.With(claims, "exp", nil)))...), invalid("token lacks a required claim"), ""},
		{"exp far in the future, signed by the issuer", get(admin, bearer(sign(nil, jwktest.With(claims, "exp", time.Now().AddDate(900, 0, 0).Unix())))...), okWant, ""},
		{"negative nbf", get(admin, bearer(sign(nil, jwktest.With(claims, "nbf", -1000)))...), okWant, ""},
		// Issue 12: tokens signed by the issuer's key but shaped wrong.
		{"nbf 1e300 overflows no int64", get(admin, bearer(rawPayload(`{`+base[:strings.Index(base, `,"iat"`)]+`,"iat":`+itoa(now)+`,"nbf":1e300,"exp":`+later+`,"scope":"pd_AdminWebApi"}`))...), invalid("token is malformed"), ""},
		{"nbf 1e19, past int64", get(admin, bearer(rawPayload(`{`+base[:strings.Index(base, `,"iat"`)]+`,"iat":`+itoa(now)+`,"nbf":1e19,"exp":`+later+`,"scope":"pd_AdminWebApi"}`))...), invalid("token is malformed"), ""},
		{"iat 1e300", get(admin, bearer(rawPayload(`{`+base[:strings.Index(base, `,"iat"`)]+`,"iat":1e300,"nbf":`+itoa(now)+`,"exp":`+later+`,"scope":"pd_AdminWebApi"}`))...), invalid("token is malformed"), ""},
		{"exp as a numeric string", get(admin, bearer(rawPayload(`{`+base+`,"exp":"9999999999","scope":"pd_AdminWebApi"}`))...), invalid("token is malformed"), ""},
		{"exp past, EXP future: names are case-sensitive", get(admin, bearer(rawPayload(`{`+base+`,"exp":`+itoa(now-3600)+`,"EXP":`+later+`,"scope":"pd_AdminWebApi"}`))...), invalid("token expired"), ""},
		{"EXP future, exp past: names are case-sensitive", get(admin, bearer(rawPayload(`{`+base+`,"EXP":`+later+`,"exp":`+itoa(now-3600)+`,"scope":"pd_AdminWebApi"}`))...), invalid("token expired"), ""},
		{"ISS right, iss wrong: names are case-sensitive", get(admin, bearer(sign(nil, jwktest.With(claims, "iss", "https://evil.example/ids", "ISS", s.issuer())))...), invalid("token issuer not accepted"), ""},
		{"Exp only: a missing exp", get(admin, bearer(sign(nil, jwktest.With(claims, "exp", nil, "Exp", time.Now().Add(time.Hour).Unix())))...), invalid("token lacks a required claim"), ""},
		{"scope split on a non-breaking space", get(admin, bearer(sign(nil, jwktest.With(claims, "scope", "pd_ConnectWebApi\u00a0pd_AdminWebApi")))...), invalid("token scope claim holds a scope name with whitespace in it"), ""},
		{"scope split on a tab", get(admin, bearer(sign(nil, jwktest.With(claims, "scope", "pd_ConnectWebApi\tpd_AdminWebApi")))...), invalid("token scope claim holds a scope name with whitespace in it"), ""},
		{"token bound to a DPoP key (cnf jkt)", get(admin, bearer(sign(nil, jwktest.With(claims, "cnf", map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"})))...), invalid("token is bound to a key"), ""},
		{"token bound to a certificate (cnf x5t#S256)", get(admin, bearer(sign(nil, jwktest.With(claims, "cnf", map[string]any{"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"})))...), invalid("token is bound to a key"), ""},
		{"940 KB token with a valid signature", get(admin, bearer(huge)...), invalid("token is too large"), ""},
		{"token minted for another resource server", get(admin, bearer(sign(nil, jwktest.With(claims, "aud", "https://other-api.example")))...), invalid("token audience not accepted"), ""},
		{"token without aud", get(admin, bearer(sign(nil, jwktest.With(claims, "aud", nil)))...), invalid("token audience not accepted"), ""},
		{"garbage claims, attacker's signature: the signature is checked first", get(admin, bearer(signRaw(t, attacker, seg(map[string]any{"alg": "ES256", "typ": "at+jwt", "kid": k.KID}), base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+s.issuer()+`","exp":"soon","aud":7}`))))...), invalid("signature invalid"), ""},
		{"aud as an object", get(admin, bearer(sign(nil, jwktest.With(claims, "aud", map[string]any{"a": 1})))...), invalid("token is malformed"), ""},
		{"scope as a number", get(admin, bearer(sign(nil, jwktest.With(claims, "scope", 1)))...), invalid("token scope claim is neither a string nor an array of strings"), ""},
		{"scope array with a number", get(admin, bearer(sign(nil, jwktest.With(claims, "scope", []any{"pd_AdminWebApi", 1})))...), invalid("token scope claim is neither a string nor an array of strings"), ""},
		{"duplicate scope keys: the token is malformed", get(admin, bearer(rawPayload(`{`+base+`,"exp":`+itoa(now+3600)+`,"scope":"pd_AdminWebApi","scope":"pd_ConnectWebApi"}`))...), invalid("token is malformed"), ""},
		{"duplicate scope keys, the last granting: malformed still", get(admin, bearer(rawPayload(`{`+base+`,"exp":`+itoa(now+3600)+`,"scope":"pd_ConnectWebApi","scope":"pd_AdminWebApi"}`))...), invalid("token is malformed"), ""},
		{"our issuer's token for another audience", get(admin, bearer(payments.AccessToken)...), invalid("token audience not accepted"), payments.AccessToken},
		{"aud missing", get(admin, bearer(sign(nil, jwktest.With(claims, "aud", nil)))...), invalid(""), ""},
		{"another issuer, signed by our key", get(admin, bearer(sign(nil, jwktest.With(claims, "iss", "https://evil.example/ids")))...), invalid("token issuer not accepted"), ""},
		{"typ id_token", get(admin, bearer(sign(map[string]any{"typ": "id+jwt"}, claims))...), invalid("token type is not an access token"), ""},
		{"admin token at the Connect API", get(api+"/Connect/Session/x", bearer(valid)...), expectation{status: 403, kind: "insufficient_scope"}, ""},
		{"valid token replayed at SCIM", get(scimUsers, bearer(valid)...), scimWant, valid},
		{"token in the query only", get(admin + "?access_token=" + valid), challengeWant, valid},
		{"bearer in lower case", get(admin, "Authorization", "bearer "+valid), okWant, ""},
		{"two Authorization headers", get(admin, "Authorization", "Bearer "+valid, "Authorization", "Bearer "+valid), expectation{status: 400, kind: "invalid_request"}, valid},
		{"a tab inside the token", get(admin, "Authorization", "Bearer "+parts[0]+"\t"+parts[1]), expectation{status: 400, kind: "invalid_request"}, ""},
		{"10 KB of garbage", get(admin, bearer(strings.Repeat("%", 10<<10))...), invalid("token is malformed"), ""},
		{"non-UTF-8 bytes in the token", get(admin, bearer("\xff\xfe.\xc3\x28.\x80")...), invalid("token is malformed"), ""},
		{"quotes and backslashes in the token", get(admin, bearer(`a"b\c".x.y`)...), invalid("token is malformed"), `a"b\c"`},
		{"scheme Basic", get(admin, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:admin-secret"))), challengeWant, ""},
		{"token endpoint: scope escalation", formPost(withForm(good, "scope", scope.ConnectWebAPI)), oauthErr(400, "invalid_scope"), ""},
		{"token endpoint: scope escalation beside an allowed scope", formPost(withForm(good, "scope", scope.AdminWebAPI+" "+scope.ConnectWebAPI)), oauthErr(400, "invalid_scope"), ""},
		{"token endpoint: duplicate parameters", formPost(good.Encode() + "&client_id=connect"), oauthErr(400, "invalid_request"), ""},
		{"token endpoint: client_id in Basic and body", formPost(good.Encode(), "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:admin-secret"))), oauthErr(400, "invalid_request"), ""},
		{"token endpoint: 1 MB form body", formPost(good.Encode() + "&pad=" + strings.Repeat("x", 1<<20)), oauthErr(400, "invalid_request"), ""},
		{"token endpoint: non-UTF-8 client_id", formPost(withForm(good, "client_id", "\xff\xfeadmin")), oauthErr(401, "invalid_client"), ""},
		{"token endpoint: CR, LF and quotes in the secret", formPost(withForm(good, "client_secret", "x\r\nSet-Cookie: a=b\"")), oauthErr(401, "invalid_client"), ""},
		{"token endpoint: Basic plus the same client_id in the body (requests-oauthlib)", formPost(withForm(url.Values{"grant_type": {"client_credentials"}, "client_id": {"admin"}, "scope": {scope.AdminWebAPI}}), "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:admin-secret"))), okWant, ""},
		{"token endpoint: Basic plus another client_id in the body", formPost(withForm(url.Values{"grant_type": {"client_credentials"}, "client_id": {"connect"}, "scope": {scope.AdminWebAPI}}), "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:admin-secret"))), oauthErr(400, "invalid_request"), ""},
		{"token endpoint: a 200 KiB client_id in Basic", formPost(withForm(url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}}), "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(strings.Repeat("c", 200<<10)+":x"))), oauthErr(400, "invalid_request"), ""},
		{"token endpoint: a 1 KiB client_secret in the body", formPost(withForm(url.Values{"grant_type": {"client_credentials"}, "client_id": {"admin"}, "client_secret": {strings.Repeat("s", 1<<10)}, "scope": {scope.AdminWebAPI}})), oauthErr(400, "invalid_request"), ""},
		{"SCIM: a 2 KiB bearer value is refused unhashed", get(scimUsers, bearer(strings.Repeat("t", 2<<10))...), scimWant, ""},
		{"token endpoint: malformed Basic", formPost(withForm(url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}}), "Authorization", "Basic !!!"), oauthErr(401, "invalid_client"), ""},
		{"token endpoint: password grant", formPost(withForm(good, "grant_type", "password")), oauthErr(400, "unsupported_grant_type"), ""},
		{"token endpoint: JSON body", func() *http.Request {
			r, _ := http.NewRequest("POST", tokenURL, strings.NewReader(`{"grant_type":"client_credentials"}`))
			r.Header.Set("Content-Type", "application/json")
			return r
		}, oauthErr(400, "invalid_request"), ""},
		{"token endpoint: GET", get(tokenURL + "?" + good.Encode()), oauthErr(405, "invalid_request"), ""},
		{"assertion: baseline, a valid one", formPost(asForm(validAssertion)), okWant, ""},
		{"assertion: the same one replayed", formPost(asForm(validAssertion)), badClient, validAssertion},
		{"assertion: alg none, empty signature", formPost(asForm(seg(map[string]any{"alg": "none"}) + "." + claimsSeg + ".")), badClient, ""},
		{"assertion: alg none with a signature", formPost(asForm(seg(map[string]any{"alg": "none"}) + "." + claimsSeg + "." + strings.Split(validAssertion, ".")[2])), badClient, ""},
		{"assertion: HS256 keyed with the client's public key PEM", formPost(asForm(hsAssertion())), badClient, ""},
		{"assertion: the client's kid, the attacker's key", formPost(asForm(assertion(attacker, nil, nil))), badClient, ""},
		{"assertion: the attacker's embedded jwk", formPost(asForm(assertion(attacker, map[string]any{"jwk": attacker.PublicJWK(), "kid": nil}, nil))), badClient, ""},
		{"assertion: jku pointing elsewhere", formPost(asForm(assertion(attacker, map[string]any{"jku": elsewhere.URL}, nil))), badClient, ""},
		{"assertion: x5u pointing elsewhere", formPost(asForm(assertion(attacker, map[string]any{"x5u": elsewhere.URL}, nil))), badClient, ""},
		{"assertion: aud the resource server", formPost(asForm(assertion(keyed, nil, map[string]any{"aud": s.issuer() + "/resources"}))), badClient, ""},
		{"assertion: iss another client", formPost(asForm(assertion(keyed, nil, map[string]any{"iss": "admin"}))), badClient, ""},
		{"assertion: sub another client", formPost(asForm(assertion(keyed, nil, map[string]any{"sub": "admin"}))), badClient, ""},
		{"assertion: expired", formPost(asForm(assertion(keyed, nil, map[string]any{"iat": now - 600, "exp": now - 300}))), badClient, ""},
		{"assertion: exp a year ahead", formPost(asForm(assertion(keyed, nil, map[string]any{"exp": now + 365*86400}))), badClient, ""},
		{"assertion: exp 1e300", formPost(asForm(assertion(keyed, nil, map[string]any{"exp": 1e300}))), badClient, ""},
		{"assertion: EXP only, names are case-sensitive", formPost(asForm(assertion(keyed, nil, map[string]any{"exp": nil, "EXP": now + 60}))), badClient, ""},
		{"assertion: jti missing", formPost(asForm(assertion(keyed, nil, map[string]any{"jti": nil}))), badClient, ""},
		{"assertion: garbage", formPost(asForm(strings.Repeat("%", 1<<10))), badClient, ""},
		{"assertion: 10 KB, refused undecoded", formPost(asForm(assertion(keyed, nil, map[string]any{"pad": strings.Repeat("p", 10<<10)}))), oauthErr(400, "invalid_request"), ""},
		{"assertion: beside a client secret", formPost(asForm(assertion(keyed, nil, nil), "client_id", "admin", "client_secret", "admin-secret")), oauthErr(400, "invalid_request"), ""},
		{"assertion: beside Basic", formPost(asForm(assertion(keyed, nil, nil)), "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:admin-secret"))), oauthErr(400, "invalid_request"), ""},
		{"assertion: given twice", formPost(asForm(assertion(keyed, nil, nil)) + "&client_assertion=" + assertion(keyed, nil, nil)), oauthErr(400, "invalid_request"), ""},
		{"assertion: with a resource the client may have", formPost(asForm(assertion(keyed, nil, nil), "resource", "https://payments.example/api")), okWant, ""},
		{"assertion: with a resource the client may not have", formPost(asForm(assertion(keyed, nil, nil), "resource", s.issuer()+"/resources")), oauthErr(400, "invalid_target"), ""},
		{"SCIM: another tenant's token", get(s.URL+"/webapi/scim-api/v1/other/scim/Users", "Authorization", "Bearer acme-scim-token"), scimWant, "acme-scim-token"},
		{"SCIM: filter injection", get(scimUsers+"?filter="+url.QueryEscape(`userName eq "x" or 1 eq 1`), "Authorization", "Bearer acme-scim-token"), expectation{status: 400, kind: "scim"}, ""},
		{"Admin: negative pageSize", get(admin+"?pageSize=-1", bearer(valid)...), expectation{status: 400, kind: "problem"}, ""},
		{"Admin: page beyond int64", get(admin+"?page=99999999999999999999", bearer(valid)...), expectation{status: 400, kind: "problem"}, ""},
		{"Admin: the last page number at the largest page size", get(admin+"?page=1073741824&pageSize=1000", bearer(valid)...), okWant, ""},
		{"SCIM paging: count at int64 max after startIndex 2", scimGet("startIndex=2&count=9223372036854775807"), scimListWant, ""},
		{"SCIM paging: count beyond int64", scimGet("count=99999999999999999999"), scimListWant, ""},
		{"SCIM paging: startIndex at int64 max", scimGet("startIndex=9223372036854775807&count=9223372036854775807"), scimListWant, ""},
		{"SCIM paging: startIndex at int64 min", scimGet("startIndex=-9223372036854775808&count=2"), scimListWant, ""},
		{"SCIM paging: negative startIndex and count", scimGet("startIndex=-1&count=-1"), scimListWant, ""},
		{"SCIM paging: count not an integer", scimGet("count=ten"), invalidValue, ""},
		{"SCIM paging: startIndex a fraction", scimGet("startIndex=1.5"), invalidValue, ""},
		{"SCIM paging: startIndex in hex", scimGet("startIndex=0x7fffffffffffffff"), invalidValue, ""},
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	secrets := []string{"admin-secret", "connect-secret", "payments-secret", "acme-scim-token"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := c.req()
			sentToken := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := reply{resp.StatusCode, resp.Header, string(b), resp.Request.URL.EscapedPath()}
			if r.status >= 500 {
				t.Fatalf("a %d", r.status)
			}
			c.want.check(t, r)
			var headers bytes.Buffer
			_ = resp.Header.Write(&headers)
			everything := r.body + headers.String()
			for _, tok := range []string{c.token, sentToken} {
				if len(tok) >= 12 && r.status != 200 && strings.Contains(everything, tok[len(tok)-12:]) {
					t.Fatalf("the answer echoes the token")
				}
			}
			for _, sec := range secrets {
				if strings.Contains(everything, sec) {
					t.Fatalf("the answer echoes %q", sec)
				}
			}
		})
	}
	if n := fetched.Load(); n != 0 {
		t.Fatalf("a jku/x5u URL was fetched %d times", n)
	}
	logs := s.logs.String()
	if strings.Count(logs, "request rejected") < 30 {
		t.Fatalf("the log saw too little to be checked:\n%s", logs)
	}
	for _, sec := range append(secrets, parts[2], attacker.KID) {
		if strings.Contains(logs, sec) {
			t.Fatalf("the debug log holds %q", sec)
		}
	}
}

// TestHostileAddresses: behind a trusted proxy header, one client address
// is one limiter key however it is written (ports, IPv6 spellings, one
// /64), at the token endpoint and at SCIM; another address is not slowed.
func TestHostileAddresses(t *testing.T) {
	s := newInProcessLimits(t, map[string]any{"trustedProxyHeader": "X-Forwarded-For", "failedAttemptsPerAddress": 3, "failedAttemptsPerClient": 100})
	tokenURL := s.URL + "/ids/connect/token"
	scimUsers := s.URL + "/webapi/scim-api/v1/acme/scim/Users"
	guesses := 0
	tokenTry := func(xff string) reply {
		guesses++ // a new wrong secret each time: a repeated one is charged once
		wrongSecret := withForm(url.Values{"grant_type": {"client_credentials"}, "client_id": {"admin"}, "client_secret": {"wrong-" + strconv.Itoa(guesses)}, "scope": {scope.AdminWebAPI}})
		return send(t, http.DefaultClient, "POST", tokenURL, wrongSecret, "Content-Type", "application/x-www-form-urlencoded", "X-Forwarded-For", xff)
	}
	scimTry := func(xff string) reply {
		return send(t, http.DefaultClient, "GET", scimUsers, "", "Authorization", "Bearer wrong-token", "X-Forwarded-For", xff)
	}
	cases := []struct {
		name      string
		spellings []string // three failures, then the fourth is refused
	}{
		{"IPv4 with a new port each time", []string{"203.0.113.5:1001", "203.0.113.5:1002", "203.0.113.5:1003", "203.0.113.5:1004"}},
		{"one IPv6 address written five ways", []string{"2001:db8:0:0:1::1", "2001:DB8::1:0:0:1", "[2001:db8::1:0:0:1]:1234", "2001:0db8:0000:0000:0001:0000:0000:0001", "[2001:0DB8::1:0:0:1]"}},
		{"IPv6 addresses of one /64", []string{"2001:db8:5:5::1", "2001:db8:5:5::2", "2001:db8:5:5:ffff::3", "2001:db8:5:5:1:2:3:4"}},
		{"IPv4-mapped IPv6 is the IPv4 address", []string{"198.51.100.9", "::ffff:198.51.100.9", "[::ffff:198.51.100.9]:7", "198.51.100.9:8"}},
		{"a proxy chain: the rightmost address counts", []string{"10.0.0.1, 192.0.2.77", "10.0.0.2, 192.0.2.77", "spoofed, 192.0.2.77:5", "192.0.2.77"}},
	}
	for _, c := range cases {
		for _, ep := range []struct {
			name string
			try  func(string) reply
			fail expectation
			slow expectation
		}{
			{"token endpoint", tokenTry, oauthErr(401, "invalid_client"), oauthErr(429, "slow_down")},
			{"SCIM", scimTry, scimWant, expectation{status: 429, kind: "scim"}},
		} {
			t.Run(ep.name+": "+c.name, func(t *testing.T) {
				// SCIM comes second: the token endpoint's failures were its own.
				for i, sp := range c.spellings {
					r := ep.try(sp)
					if i < 3 {
						ep.fail.check(t, r)
						continue
					}
					ep.slow.check(t, r)
					if r.header.Get("Retry-After") == "" {
						t.Fatal("429 without Retry-After")
					}
				}
			})
		}
	}
	// Every spelling above was locked out; an address never seen is not.
	if r := tokenTry("192.0.2.200"); r.status != 401 {
		t.Fatalf("a fresh address got %d", r.status)
	}
	if r := scimTry("192.0.2.201"); r.status != 401 {
		t.Fatalf("a fresh address got %d at SCIM", r.status)
	}
}

func withForm(v url.Values, kv ...string) string {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out.Encode()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// signRaw signs the given header and payload segments with k.
func signRaw(t *testing.T, k *keys.Key, header, payload string) string {
	t.Helper()
	sig, err := jwt.GetSigningMethod(k.Alg).Sign(header+"."+payload, k.Private)
	if err != nil {
		t.Fatal(err)
	}
	return header + "." + payload + "." + base64.RawURLEncoding.EncodeToString(sig)
}
