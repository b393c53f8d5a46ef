// Package jwktest gives tests real keys, real signed JWTs and a real JWKS
// server on loopback. It holds no logic of the library: only what a test
// needs to play the identity service's part.
package jwktest

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/keys"
)

// Algs are the signing algorithms tests run over.
var Algs = []string{"RS256", "ES256", "EdDSA"}

// NewKey generates a key for alg or fails the test.
func NewKey(t testing.TB, alg string) *keys.Key {
	t.Helper()
	k, err := keys.Generate(alg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Claims returns a valid claim set for issuer with scope, living ttl.
func Claims(issuer, scope string, ttl time.Duration) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss":       issuer,
		"sub":       "test-client",
		"client_id": "test-client",
		"aud":       issuer + "/resources",
		"scope":     scope,
		"iat":       now.Unix(),
		"nbf":       now.Unix(),
		"exp":       now.Add(ttl).Unix(),
		"jti":       "test-jti",
	}
}

// Sign signs claims with k. header entries are set over the defaults
// (alg and kid of k, typ "at+jwt"); a nil value removes an entry.
func Sign(t testing.TB, k *keys.Key, header, claims map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(k.Alg), jwt.MapClaims(claims))
	tok.Header["kid"] = k.KID
	tok.Header["typ"] = "at+jwt"
	for name, v := range header {
		if v == nil {
			delete(tok.Header, name)
		} else {
			tok.Header[name] = v
		}
	}
	s, err := tok.SignedString(k.Private)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Segment base64url-encodes v as JSON, or as is when v is a string.
func Segment(v any) string {
	if s, ok := v.(string); ok {
		return base64.RawURLEncoding.EncodeToString([]byte(s))
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// JWKS is an identity service's key publication on loopback: a discovery
// document and a JWKS whose keys a test can change or take down.
type JWKS struct {
	*httptest.Server
	mu   sync.Mutex
	keys []*keys.Key
	down bool
	body []byte // served instead of the keys when set
	hits atomic.Int64
}

// NewJWKS starts a server publishing ks. It is closed with the test.
func NewJWKS(t testing.TB, ks ...*keys.Key) *JWKS {
	j := &JWKS{keys: ks}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ids/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": j.Issuer(), "jwks_uri": j.JWKSURL()})
	})
	mux.HandleFunc("GET /ids/.well-known/openid-configuration/jwks", func(w http.ResponseWriter, r *http.Request) {
		j.hits.Add(1)
		j.mu.Lock()
		down, body := j.down, j.body
		set := struct {
			Keys []keys.JWK `json:"keys"`
		}{Keys: []keys.JWK{}}
		for _, k := range j.keys {
			set.Keys = append(set.Keys, k.PublicJWK())
		}
		j.mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if body != nil {
			_, _ = w.Write(body)
			return
		}
		_ = json.NewEncoder(w).Encode(set)
	})
	j.Server = httptest.NewServer(mux)
	t.Cleanup(j.Close)
	return j
}

// Issuer is the issuer URL this server stands for.
func (j *JWKS) Issuer() string { return j.URL + "/ids" }

// JWKSURL is the address of the key set.
func (j *JWKS) JWKSURL() string { return j.Issuer() + "/.well-known/openid-configuration/jwks" }

// SetKeys replaces the published keys.
func (j *JWKS) SetKeys(ks ...*keys.Key) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.keys = ks
}

// SetDown makes the JWKS answer 503 (true) or its keys (false).
func (j *JWKS) SetDown(down bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.down = down
}

// SetBody makes the JWKS answer body instead of its keys; nil restores.
func (j *JWKS) SetBody(body []byte) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.body = body
}

// Hits counts the JWKS fetches so far.
func (j *JWKS) Hits() int { return int(j.hits.Load()) }

// With returns a copy of m with the given entries set; a nil value removes
// an entry.
func With(m map[string]any, kv ...any) map[string]any {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		if kv[i+1] == nil {
			delete(out, name)
		} else {
			out[name] = kv[i+1]
		}
	}
	return out
}
