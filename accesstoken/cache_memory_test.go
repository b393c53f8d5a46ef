package accesstoken

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// noKeys is a key source for tests that never verify.
type noKeys struct{}

func (noKeys) VerificationKeys(context.Context, string, string) ([]crypto.PublicKey, error) {
	return nil, ErrUnknownKey
}
func (noKeys) KeysVersion() uint64 { return 1 }

// TestCacheEntryMemory measures, after a GC, what a full cache costs per
// entry beside its token, and holds it within 20% of cacheEntryOverhead,
// the number the documentation states.
func TestCacheEntryMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates tens of MB")
	}
	const n = 20000
	ctx := context.Background()
	v, err := New(ctx, Config{Issuer: "http://127.0.0.1:8080/ids", AnyAudience: true, Keys: noKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// Tokens shaped as the issuer makes them: ES256, aud, a space-delimited
	// scope, a 22-character jti; 485 to 490 bytes each.
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","kid":"hmXyBT7gGy2SVk0fy2fW1RmOqq8aFpgLkMQfrvJ2wzE","typ":"at+jwt"}`))
	sig := strings.Repeat("s", 86)
	payloads := make([][]byte, n)
	tokens := make([]string, n)
	total := 0
	for i := range n {
		p, _ := json.Marshal(map[string]any{
			"iss": "http://127.0.0.1:8080/ids", "sub": "demo-admin", "client_id": "demo-admin",
			"aud": []string{"http://127.0.0.1:8080/ids/resources"}, "scope": "pd_AdminWebApi",
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
			"jti": fmt.Sprintf("%022d", i),
		})
		payloads[i] = p
		tokens[i] = header + "." + base64.RawURLEncoding.EncodeToString(p) + "." + sig
		total += len(tokens[i])
	}
	c := newTokenCache(n, time.Hour)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	from := v.issuers["http://127.0.0.1:8080/ids"]
	for i, tok := range tokens {
		key := strings.Clone(tok) // as Validate does
		_, rest, _ := strings.Cut(key, ".")
		p64, _, _ := strings.Cut(rest, ".")
		raw, err := readClaimSet(payloads[i])
		if err != nil {
			t.Fatal(err)
		}
		claims, err := v.claims(from, raw, p64, "", now)
		if err != nil {
			t.Fatal(err)
		}
		c.put(key, claims, now, now.Add(time.Hour), from.versioned, 1)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if c.len() != n {
		t.Fatalf("%d entries, want %d", c.len(), n)
	}
	perEntry := float64(after.HeapAlloc-before.HeapAlloc) / n
	avgToken := float64(total) / n
	overhead := perEntry - avgToken
	t.Logf("%.0f bytes per entry with a %.0f-byte token: %.0f beside the token (documented: %d)", perEntry, avgToken, overhead, cacheEntryOverhead)
	if overhead < 0.8*cacheEntryOverhead || overhead > 1.2*cacheEntryOverhead {
		t.Errorf("an entry costs %.0f bytes beside its token; the documentation says %d", overhead, cacheEntryOverhead)
	}
	runtime.KeepAlive(c)
	runtime.KeepAlive(tokens)
	runtime.KeepAlive(payloads)

	// The number in Config's documentation is this one.
	src, err := os.ReadFile("config.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("about %d bytes plus", cacheEntryOverhead); !strings.Contains(strings.Join(strings.Fields(string(src)), " "), want) {
		t.Errorf("config.go does not say %q", want)
	}
}
