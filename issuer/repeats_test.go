package issuer

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/idsauth/idsauth/secret"
)

// A credential is HMAC-SHA256 under the table's own key of the secret
// hashes checked (their count, then each after its length), the subject,
// secret and address, each after its length, truncated to 96 bits: a
// keyed hash, whose key another repeatTable (another process) does not
// share, and which another set of hashes does not match.
func TestMarkIsAKeyedHMAC(t *testing.T) {
	r := newRepeatTable(4 << 10)
	hashes := []secret.Hash{secret.HashSHA256("one"), secret.HashSHA256("two")}
	mac := hmac.New(sha256.New, r.key[:])
	mac.Write(binary.AppendUvarint(nil, uint64(len(hashes))))
	for _, s := range []string{hashes[0].String(), hashes[1].String(), "client", "s3cret", "192.0.2.1"} {
		mac.Write(binary.AppendUvarint(nil, uint64(len(s))))
		mac.Write([]byte(s))
	}
	sum := mac.Sum(nil)
	want := credential{key: binary.LittleEndian.Uint64(sum), check: binary.LittleEndian.Uint32(sum[8:])}
	if got := r.Mark("client", hashes, "s3cret", "192.0.2.1"); got != want {
		t.Fatalf("Mark = %+v, want the HMAC's %+v", got, want)
	}
	if newRepeatTable(4<<10).Mark("client", hashes, "s3cret", "192.0.2.1") == want {
		t.Fatal("two repeatTable share a key")
	}
	for _, other := range [][]secret.Hash{nil, hashes[:1], {hashes[0], secret.HashSHA256("three")}} {
		if r.Mark("client", other, "s3cret", "192.0.2.1") == want {
			t.Fatalf("checked against %v, the credential is the one checked against %v", other, hashes)
		}
	}
	// No two triples run together.
	if r.Mark("ab", nil, "c", "x") == r.Mark("a", nil, "bc", "x") || r.Mark("a", nil, "bc", "x") == r.Mark("a", nil, "b", "cx") {
		t.Fatal("the parts of a credential run together")
	}
}

// Mark, run on every token request with a secret, allocates nothing.
func TestMarkAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not kept under the race detector")
	}
	r := newRepeatTable(4 << 10)
	if n := testing.AllocsPerRun(100, func() { r.Mark("client", nil, "s3cret", "192.0.2.1") }); n != 0 {
		t.Fatalf("Mark allocates %v times", n)
	}
}

// A remembered failure counts until its window ends, for that subject,
// secret and address only.
func TestRepeatCountsWithinItsWindow(t *testing.T) {
	r := newRepeatTable(4 << 10)
	now := time.Unix(1_800_000_000, 0)
	c := r.Mark("client", nil, "wrong", "192.0.2.1")
	if r.Failed(c, now) {
		t.Fatal("a credential never remembered counts as failed")
	}
	r.Remember(c, now.Add(time.Minute))
	for _, other := range []credential{r.Mark("client", nil, "wrong2", "192.0.2.1"), r.Mark("client2", nil, "wrong", "192.0.2.1"), r.Mark("client", nil, "wrong", "192.0.2.2"), {}} {
		if r.Failed(other, now) {
			t.Fatalf("%+v counts as the failed %+v", other, c)
		}
	}
	if !r.Failed(c, now) || !r.Failed(c, now.Add(59*time.Second)) {
		t.Fatal("a failure is forgotten within its window")
	}
	if r.Failed(c, now.Add(time.Minute)) {
		t.Fatal("a failure counts after its window")
	}
}

// A full table forgets the failures that expire first, never makes up
// one, and never grows: fullness charges a repeat again, it never frees
// a guess.
func TestFullRepeatsForgetRatherThanInvent(t *testing.T) {
	r := newRepeatTable(4 << 10) // 256 entries
	now := time.Unix(1_800_000_000, 0)
	const n = 10_000
	for i := range n {
		r.Remember(r.Mark("client", nil, fmt.Sprint("guess-", i), "192.0.2.1"), now.Add(time.Duration(i)*time.Millisecond+time.Hour))
	}
	if r.Bytes() != 4<<10 {
		t.Fatalf("the table holds %d bytes, want 4096", r.Bytes())
	}
	kept := 0
	for i := range n {
		if r.Failed(r.Mark("client", nil, fmt.Sprint("guess-", i), "192.0.2.1"), now) {
			kept++
		}
	}
	if kept != len(r.entries) {
		t.Fatalf("%d of %d failures are kept in a table of %d entries", kept, n, len(r.entries))
	}
	for i := range n {
		if r.Failed(r.Mark("client", nil, fmt.Sprint("other-", i), "192.0.2.1"), now) {
			t.Fatalf("a credential never remembered counts as failed (%d)", i)
		}
	}
	// The last one remembered replaced an older one, not itself.
	if !r.Failed(r.Mark("client", nil, fmt.Sprint("guess-", n-1), "192.0.2.1"), now) {
		t.Fatal("the latest failure was the one forgotten")
	}
}

// An Attempt answers as Mark, Failed and Remember do, over a run of
// failures and repeats from a few subjects, secrets and addresses as the
// clock moves across windows: the filter changes no answer.
func TestAttemptAnswersAsMarkAndFailed(t *testing.T) {
	viaAttempt, viaMark := newRepeatTable(64<<10), newRepeatTable(64<<10)
	now := time.Unix(1_800_000_000, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	repeats := 0
	for i := range 20_000 {
		subject, secret, addr := fmt.Sprint("client-", rng.IntN(4)), fmt.Sprint("secret-", rng.IntN(6)), fmt.Sprint("192.0.2.", rng.IntN(3))
		now = now.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
		a := viaAttempt.Attempt(subject, nil, secret, addr)
		c := viaMark.Mark(subject, nil, secret, addr)
		got, want := a.Repeated(now), viaMark.Failed(c, now)
		if got != want {
			t.Fatalf("step %d: Attempt.Repeated %v, Failed %v", i, got, want)
		}
		if want {
			repeats++
			continue
		}
		if rng.IntN(3) > 0 { // the secret failed
			a.Failed(now.Add(time.Minute))
			viaMark.Remember(c, now.Add(time.Minute))
		}
	}
	if repeats < 1000 {
		t.Fatalf("only %d repeats: the run tried too little", repeats)
	}
}

// An Attempt from a subject and address that failed nothing within the
// window computes no HMAC (Marks counts them): nor does its right secret,
// however often it comes. Once a secret of that pair failed, an attempt
// of it hashes its secret to look it up; another pair's attempt still
// does not, nor does the pair's once the window has passed.
func TestAttemptHashesOnlyAfterItsPairFailed(t *testing.T) {
	r := newRepeatTable(64 << 10)
	now := time.Unix(1_800_000_000, 0)
	for range 100 {
		if a := r.Attempt("client", nil, "right", "192.0.2.1"); a.Repeated(now) {
			t.Fatal("a right secret counts as failed")
		}
	}
	if n := r.Marks(); n != 0 {
		t.Fatalf("100 attempts of a pair that never failed computed %d HMACs, want 0", n)
	}
	a := r.Attempt("client", nil, "wrong", "192.0.2.1")
	a.Repeated(now)
	a.Failed(now.Add(time.Minute))
	if n := r.Marks(); n != 1 {
		t.Fatalf("a failure computed %d HMACs, want 1", n)
	}
	if b := r.Attempt("client", nil, "wrong", "192.0.2.1"); !b.Repeated(now) || r.Marks() != 2 {
		t.Fatalf("the repeat is not found by its HMAC (%d computed)", r.Marks())
	}
	// Another address of the same client: a slot of its own (one of the
	// table's entries; a shared one would only cost it the HMAC).
	other := ""
	for i := 2; other == ""; i++ {
		addr := fmt.Sprint("192.0.2.", i)
		if o := r.Attempt("client", nil, "right", addr); o.slot != a.slot {
			other = addr
		}
	}
	before := r.Marks()
	for range 100 {
		if o := r.Attempt("client", nil, "right", other); o.Repeated(now) {
			t.Fatal("another address's secret counts as failed")
		}
	}
	if b := r.Attempt("client", nil, "wrong", "192.0.2.1"); b.Repeated(now.Add(time.Minute)) || r.Marks() != before {
		t.Fatalf("after the window, or from another pair, HMACs were computed: %d, want %d", r.Marks(), before)
	}
}

// Attempt, Repeated and Failed allocate nothing.
func TestAttemptAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not kept under the race detector")
	}
	r := newRepeatTable(4 << 10)
	now := time.Unix(1_800_000_000, 0)
	if n := testing.AllocsPerRun(100, func() {
		a := r.Attempt("client", nil, "s3cret", "192.0.2.1")
		if !a.Repeated(now) {
			a.Failed(now.Add(time.Minute))
		}
	}); n != 0 {
		t.Fatalf("an attempt allocates %v times", n)
	}
}
