package replay

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

// One subject that holds a key and asks as fast as it can fills its own
// window, an eighth of the table, and refuses itself; the other subjects
// keep adding their IDs.
func TestOneSubjectCannotFillTheTable(t *testing.T) {
	c := New(256 << 10)
	until := t0.Add(6 * time.Minute)
	window := int(c.windowSets()) * ways
	rogue := 0
	for i := range len(c.entries) {
		fresh, full := c.Add("rogue", fmt.Sprint("jti-", i), until, t0)
		if !fresh {
			t.Fatalf("a new ID was taken for a replay")
		}
		if full > 0 {
			break
		}
		rogue++
	}
	if rogue > window {
		t.Fatalf("one subject holds %d IDs, more than its window of %d", rogue, window)
	}
	if rogue < window/2 {
		t.Fatalf("one subject was refused after %d IDs, a window holds %d", rogue, window)
	}
	accepted, total := 0, 0
	for s := range 300 {
		for i := range 4 {
			total++
			if fresh, full := c.Add(fmt.Sprint("client-", s), fmt.Sprint("jti-", i), until, t0); fresh && full == 0 {
				accepted++
			}
		}
	}
	if accepted < total*3/4 {
		t.Fatalf("after one subject's flood, the others got %d of %d IDs in", accepted, total)
	}
	if live := c.Live(t0); live != rogue+accepted {
		t.Fatalf("Live = %d, want %d", live, rogue+accepted)
	}
}

// An ID is refused until it expires, across a resize either way (to a
// size with room for every live ID: a smaller table drops what does not
// fit, as Resized says), and free again after.
func TestIDsAreRefusedUntilTheyExpire(t *testing.T) {
	c := New(64 << 10)
	until := t0.Add(5 * time.Minute)
	for i := range 500 {
		if fresh, full := c.Add(fmt.Sprint("client-", i%7), fmt.Sprint("jti-", i), until, t0); !fresh || full > 0 {
			t.Fatalf("ID %d: fresh %v, full %v", i, fresh, full)
		}
	}
	for _, size := range []int{256 << 10, 128 << 10} { // larger, and smaller with room for all

		r := c.Resized(size, t0.Add(time.Minute))
		for i := range 500 {
			if fresh, _ := r.Add(fmt.Sprint("client-", i%7), fmt.Sprint("jti-", i), until, t0.Add(time.Minute)); fresh {
				t.Fatalf("after a resize to %d bytes, ID %d was taken again", size, i)
			}
		}
	}
	if fresh, full := c.Add("client-0", "jti-0", until.Add(time.Hour), until.Add(time.Second)); !fresh || full > 0 {
		t.Fatalf("an expired ID is still refused: fresh %v, full %v", fresh, full)
	}
	if fresh, _ := c.Add("client-1", "jti-0", until, t0); !fresh {
		t.Fatal("the same jti of another subject was taken for a replay")
	}
}

func TestSecondsRoundUp(t *testing.T) {
	for in, want := range map[int64]uint32{0: 0, 1: 1, 999_999_999: 1, 1_000_000_000: 1, 1_000_000_001: 2, -5: 0} {
		if got := seconds(in); got != want {
			t.Errorf("seconds(%d) = %d, want %d", in, got, want)
		}
	}
}
