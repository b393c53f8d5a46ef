package secret_test

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/idsauth/idsauth/secret"
)

func bcryptHash(t testing.TB, s string, cost int) secret.Hash {
	t.Helper()
	h, err := secret.HashBcrypt(s, cost)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func verify(t *testing.T, v *secret.Verifier, hashes []secret.Hash, s string) bool {
	t.Helper()
	return v.Verify(context.Background(), hashes, s)
}

func TestVerifierChecksEveryHashAndCachesSlowOnes(t *testing.T) {
	hashes := []secret.Hash{bcryptHash(t, "old-secret", 4), secret.HashSHA256("new-secret")}
	v := secret.NewVerifier(secret.VerifierConfig{CacheEntries: 2, FailureFloor: -1})
	for _, s := range []string{"old-secret", "new-secret", "old-secret"} {
		if !verify(t, v, hashes, s) {
			t.Errorf("%q refused", s)
		}
	}
	if c := v.Counts(); c.Slow != 1 || c.CacheHits != 1 {
		t.Errorf("counts = %+v, want one bcrypt and one cache hit", c)
	}
	if verify(t, v, hashes, "other") || verify(t, v, nil, "old-secret") {
		t.Error("wrong secret or no hashes accepted")
	}
	// Fill past the bound: the cache stays correct.
	for i := range 10 {
		if !verify(t, v, []secret.Hash{bcryptHash(t, fmt.Sprint("s", i), 4)}, fmt.Sprint("s", i)) {
			t.Fatal("refused")
		}
	}
	if !verify(t, v, hashes, "old-secret") || verify(t, v, hashes, "s1") {
		t.Error("cache confused secrets after eviction")
	}
}

// Unknown, wrong and rotated do the same fast work for every fast kind,
// and an unknown subject never burns bcrypt.
func TestVerifierDoesTheSameWorkOnEveryPath(t *testing.T) {
	sha512 := "sha512:" + b(64)
	for _, kind := range []string{"sha256", "sha512", "bcrypt"} {
		t.Run(kind, func(t *testing.T) {
			hash := func(s string) secret.Hash {
				switch kind {
				case "sha256":
					return secret.HashSHA256(s)
				case "sha512":
					return secret.MustParse(sha512)
				}
				return bcryptHash(t, s, 4)
			}
			one := []secret.Hash{hash("a")}
			rotated := []secret.Hash{hash("b"), hash("c")}
			v := secret.NewVerifier(secret.VerifierConfig{})
			v.Prime(one, rotated)
			work := map[string]secret.Counts{}
			for name, hashes := range map[string][]secret.Hash{"unknown": nil, "wrong": one, "rotated": rotated} {
				before := v.Counts()
				if verify(t, v, hashes, "guess") {
					t.Fatal("a guess matched")
				}
				after := v.Counts()
				work[name] = secret.Counts{Fast: after.Fast - before.Fast, Digests: after.Digests - before.Digests, Slow: after.Slow - before.Slow, Floors: after.Floors - before.Floors, Queued: after.Queued - before.Queued}
			}
			if work["unknown"].Fast != work["wrong"].Fast || work["wrong"].Fast != work["rotated"].Fast || work["unknown"].Fast < secret.MinComparisons {
				t.Errorf("fast comparisons differ: %+v", work)
			}
			if work["unknown"].Digests != work["wrong"].Digests || work["wrong"].Digests != work["rotated"].Digests || work["unknown"].Digests == 0 {
				t.Errorf("digests computed differ: %+v", work)
			}
			if work["unknown"].Slow != 0 {
				t.Errorf("an unknown subject burned bcrypt: %+v", work)
			}
			slowConfig := kind == "bcrypt"
			if (v.Floor() > 0) != slowConfig {
				t.Errorf("floor = %v with %s hashes", v.Floor(), kind)
			}
			want := uint64(0)
			if slowConfig {
				want = 1 // every failure takes a turn and is held to the floor
			}
			for name, w := range work {
				if w.Floors != want || w.Queued != want {
					t.Errorf("%s: %d floor waits and %d turns, want %d each", name, w.Floors, w.Queued, want)
				}
			}
		})
	}
}

// Once any subject has a SHA-512 hash, every check computes both digests:
// a SHA-256 subject, a SHA-512 one and an unknown one alike. Each digest
// is computed once per check, however many hashes a subject has.
func TestVerifierComputesTheSameDigestsForEverySubject(t *testing.T) {
	s256 := []secret.Hash{secret.HashSHA256("a"), secret.HashSHA256("b"), secret.HashSHA256("c")}
	s512 := []secret.Hash{secret.MustParse("sha512:" + base64.StdEncoding.EncodeToString(sha512Sum("d")))}
	v := secret.NewVerifier(secret.VerifierConfig{})
	v.Prime(s256)
	before := v.Counts().Digests
	verify(t, v, s256, "guess")
	if got := v.Counts().Digests - before; got != 1 {
		t.Fatalf("three SHA-256 hashes: %d digests, want 1", got)
	}
	v.Prime(s512)
	for name, c := range map[string]struct {
		hashes []secret.Hash
		secret string
		ok     bool
	}{
		"sha256 right": {s256, "b", true}, "sha256 wrong": {s256, "d", false},
		"sha512 right": {s512, "d", true}, "sha512 wrong": {s512, "a", false},
		"unknown": {nil, "a", false},
	} {
		before := v.Counts().Digests
		if verify(t, v, c.hashes, c.secret) != c.ok {
			t.Errorf("%s: want %v", name, c.ok)
		}
		if got := v.Counts().Digests - before; got != 2 {
			t.Errorf("%s: %d digests, want 2", name, got)
		}
	}
}

// A check against fast hashes allocates nothing: no garbage per request.
func TestVerifierFastCheckAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not kept under the race detector")
	}
	v := secret.NewVerifier(secret.VerifierConfig{})
	hashes := []secret.Hash{secret.HashSHA256("a-secret-longer-than-32-bytes-0123456789"), secret.MustParse("sha512:" + base64.StdEncoding.EncodeToString(sha512Sum("b")))}
	v.Prime(hashes)
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { v.Verify(ctx, hashes, "a-secret-longer-than-32-bytes-0123456789") }); n != 0 {
		t.Errorf("Verify allocated %v times", n)
	}
}

func sha512Sum(s string) []byte {
	sum := sha512.Sum512([]byte(s))
	return sum[:]
}

func TestVerifierPadsToTheLongestList(t *testing.T) {
	v := secret.NewVerifier(secret.VerifierConfig{})
	six := make([]secret.Hash, 6)
	for i := range six {
		six[i] = secret.HashSHA256(fmt.Sprint(i))
	}
	v.Prime(six)
	before := v.Counts().Fast
	verify(t, v, nil, "x")
	if got := v.Counts().Fast - before; got != 6 {
		t.Fatalf("unknown subject did %d comparisons, want 6", got)
	}
}

func TestVerifierFloorSettings(t *testing.T) {
	bc := []secret.Hash{bcryptHash(t, "x", 4)}
	for _, c := range []struct {
		set, want time.Duration
	}{{-1, 0}, {7, 7}} {
		f := secret.NewVerifier(secret.VerifierConfig{FailureFloor: c.set})
		f.Prime(bc)
		if f.Floor() != c.want {
			t.Errorf("FailureFloor %v: Floor() = %v, want %v", c.set, f.Floor(), c.want)
		}
	}
}

// However many arrive at once, at most MaxConcurrentSlow bcrypt checks run
// together.
func TestVerifierBoundsConcurrentSlowChecks(t *testing.T) {
	v := secret.NewVerifier(secret.VerifierConfig{MaxConcurrentSlow: 2, CacheTTL: -1, FailureFloor: -1})
	slow := []secret.Hash{bcryptHash(t, "x", 8)}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { v.Verify(context.Background(), slow, "guess") })
	}
	wg.Wait()
	if c := v.Counts(); c.Slow != 8 || c.SlowPeak < 1 || c.SlowPeak > 2 {
		t.Fatalf("counts = %+v, want 8 checks, at most 2 at once", c)
	}
}

// A slow check waits for its turn only while its request lasts, and then
// answers false without computing anything more.
func TestVerifierSlowChecksWaitForTheirTurn(t *testing.T) {
	v := secret.NewVerifier(secret.VerifierConfig{MaxConcurrentSlow: 1, CacheTTL: -1, FailureFloor: -1})
	slow := []secret.Hash{bcryptHash(t, "x", 10)}
	v.Prime(slow)
	var wg sync.WaitGroup
	wg.Go(func() { v.Verify(context.Background(), slow, "y") })
	for v.Counts().Slow == 0 { // the first check holds the only turn once it has counted itself
		runtime.Gosched()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v.Verify(ctx, slow, "x") {
		t.Error("a check that never ran matched")
	}
	wg.Wait()
	if c := v.Counts(); c.Slow != 1 {
		t.Errorf("counts = %+v, want one bcrypt run", c)
	}
}

// Hashes nobody primed are learned on sight: the floor covers a bcrypt
// subject from its first failure on, and padding the longest list.
func TestVerifierLearnsUnprimedHashes(t *testing.T) {
	v := secret.NewVerifier(secret.VerifierConfig{})
	if v.Floor() != 0 {
		t.Fatal("a floor before any slow hash")
	}
	verify(t, v, []secret.Hash{bcryptHash(t, "x", 4)}, "y")
	if v.Floor() <= 0 {
		t.Fatal("no floor after a bcrypt subject failed")
	}
	six := make([]secret.Hash, 6)
	for i := range six {
		six[i] = secret.HashSHA256(fmt.Sprint(i))
	}
	verify(t, v, six, "y")
	before := v.Counts().Fast
	verify(t, v, nil, "y")
	if got := v.Counts().Fast - before; got != 6 {
		t.Fatalf("after a six-hash subject, an unknown one did %d comparisons, want 6", got)
	}
}
