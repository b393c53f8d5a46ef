package jwks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/jwks"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keyerr"
)

// TestParseRules: a SPIFFE bundle gives its JWT-SVID keys alone; a set
// past its bound, or with a malformed key of a type read, is refused; a
// key of a type not read, or a private one, verifies nothing.
func TestParseRules(t *testing.T) {
	k := jwktest.NewKey(t, "ES256").PublicJWK()
	jwk := fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q,"kid":"a","use":%%q}`, k.X, k.Y)
	bundle := `{"keys":[` + fmt.Sprintf(jwk, "jwt-svid") + `,` + fmt.Sprintf(jwk, "x509-svid") + `]}`
	got, err := jwks.Parse([]byte(bundle), jwks.Rules{SigUse: "jwt-svid"})
	if err != nil || len(got) != 1 || got[0].Use != "jwt-svid" || got[0].Pub == nil {
		t.Fatalf("a bundle: %v %v", got, err)
	}
	if _, err := jwks.Parse([]byte(bundle), jwks.Rules{MaxKeys: 1}); !errors.Is(err, jwks.ErrTooManyKeys) {
		t.Errorf("past MaxKeys: %v", err)
	}
	for _, bad := range []string{`{}`, `[]`, `{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`, `{"keys":[{"kty":"RSA","n":"AQAB","e":"AA"}]}`} {
		if _, err := jwks.Parse([]byte(bad), jwks.Rules{}); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
	odd, err := jwks.Parse([]byte(`{"keys":[{"kty":"OKP","crv":"X25519","x":"AA"},{"kty":"EC","crv":"P-256","x":"AA","y":"AA","d":"AA"}]}`), jwks.Rules{})
	if err != nil || len(odd) != 2 || odd[0].Pub != nil || odd[1].Pub != nil {
		t.Errorf("keys not read: %v %v", odd, err)
	}
	if set := jwks.Index(1, odd, ""); !set.Empty() {
		t.Errorf("a set of keys not read indexes %d", set.Len())
	}
}

// TestRemoteBoundsItsCallers: callers share one fetch; a caller waits no
// longer than Wait for a fetch that hangs; the keys serve until Grace
// after their fetch, then ErrKeysUnavailable, and Expired is told once.
func TestRemoteBoundsItsCallers(t *testing.T) {
	key := jwktest.NewKey(t, "ES256")
	good, err := jwks.Parse(fmt.Appendf(nil, `{"keys":[{"kty":"EC","crv":"P-256","x":%q,"y":%q,"kid":%q}]}`, key.PublicJWK().X, key.PublicJWK().Y, key.KID), jwks.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	var fetches, expired atomic.Int64
	release := make(chan struct{})
	var hang atomic.Bool
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	r := jwks.NewRemote(jwks.RemoteConfig{
		Fetch: func(ctx context.Context) ([]jwks.Key, error) {
			fetches.Add(1)
			if hang.Load() {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, ctx.Err()
			}
			return good, nil
		},
		Wait: 100 * time.Millisecond, Timeout: time.Minute, Grace: time.Hour, Refresh: 5 * time.Minute,
		Now:     func() time.Time { return time.Unix(0, clock.Load()) },
		Expired: func() { expired.Add(1) },
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := r.Keys(context.Background(), key.KID, "ES256"); err != nil {
				t.Errorf("a caller: %v", err)
			}
		})
	}
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Errorf("8 callers made %d fetches, want 1", n)
	}
	hang.Store(true)
	clock.Add(int64(2 * time.Hour)) // past the grace: the set is dropped, and a fetch hangs
	done := make(chan error, 1)
	go func() { _, err := r.Keys(context.Background(), key.KID, "ES256"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, keyerr.ErrKeysUnavailable) {
			t.Errorf("past the grace, the issuer hanging: %v, want ErrKeysUnavailable", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a caller waits on a hanging fetch past its bound")
	}
	close(release)
	if expired.Load() != 1 {
		t.Errorf("Expired told %d times, want 1", expired.Load())
	}
}
