package replay

import (
	"fmt"
	"sync"
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

// An ID is refused until it expires, across resizes either way, to a
// size with room for every live ID or without (what does not fit is
// carried beside the table), and free again after.
func TestIDsAreRefusedUntilTheyExpire(t *testing.T) {
	c := New(64 << 10)
	until := t0.Add(5 * time.Minute)
	for i := range 500 {
		if fresh, full := c.Add(fmt.Sprint("client-", i%7), fmt.Sprint("jti-", i), until, t0); !fresh || full > 0 {
			t.Fatalf("ID %d: fresh %v, full %v", i, fresh, full)
		}
	}
	// Larger, smaller with room for all, smaller without, and back.
	for _, size := range []int{256 << 10, 128 << 10, 4 << 10, 8 << 10, 64 << 10} {
		c.Resize(size, t0.Add(time.Minute))
		for i := range 500 {
			if fresh, _ := c.Add(fmt.Sprint("client-", i%7), fmt.Sprint("jti-", i), until, t0.Add(time.Minute)); fresh {
				t.Fatalf("after a resize to %d bytes, ID %d was taken again", size, i)
			}
		}
		if live := c.Live(t0.Add(time.Minute)); live != 500 {
			t.Fatalf("after a resize to %d bytes, %d IDs are live, want 500", size, live)
		}
		if got, most := c.Bytes(), BytesFor(size)+500*EntryBytes; got > most {
			t.Fatalf("after a resize to %d bytes the cache holds %d, more than the table and every live ID (%d)", size, got, most)
		}
	}
	if fresh, full := c.Add("client-0", "jti-0", until.Add(time.Hour), until.Add(time.Second)); !fresh || full > 0 {
		t.Fatalf("an expired ID is still refused: fresh %v, full %v", fresh, full)
	}
	if fresh, _ := c.Add("client-1", "jti-0", until, t0); !fresh {
		t.Fatal("the same jti of another subject was taken for a replay")
	}
}

// A resize to a table whose window for a subject holds 32 of its 300 live
// IDs carries the rest beside it: each is refused until it expires, new
// IDs are taken as room frees, and once the last carried ID has expired
// the cache is its table alone.
func TestResizeCarriesWhatDoesNotFit(t *testing.T) {
	c := New(256 << 10)
	until := func(i int) time.Time { return t0.Add(time.Duration(i+1) * time.Second) } // one a second
	for i := range 300 {
		if fresh, full := c.Add("client", fmt.Sprint("jti-", i), until(i), t0); !fresh || full > 0 {
			t.Fatalf("ID %d: fresh %v, full %v", i, fresh, full)
		}
	}
	c.Resize(4<<10, t0)
	if got := c.Bytes(); got <= 4<<10 || got > 4<<10+300*EntryBytes {
		t.Fatalf("after the resize the cache holds %d bytes, want more than its 4096 (it carries what does not fit) and at most 300 entries more", got)
	}
	taken := 0
	for s := 0; s <= 300; s += 7 {
		now := t0.Add(time.Duration(s) * time.Second)
		for i := s; i < 300; i++ { // live: until(i) is after now
			if fresh, _ := c.Add("client", fmt.Sprint("jti-", i), until(i), now); fresh {
				t.Fatalf("at +%ds, ID %d (live until +%ds) was taken again", s, i, i+1)
			}
		}
		if fresh, full := c.Add("client", fmt.Sprint("new-", s), now.Add(time.Second), now); fresh && full == 0 {
			taken++
		}
	}
	if taken == 0 {
		t.Fatal("no new ID was taken while the carried ones expired")
	}
	end := until(300)
	if fresh, full := c.Add("client", "last", end.Add(time.Minute), end); !fresh || full > 0 {
		t.Fatalf("a new ID once all expired: fresh %v, full %v", fresh, full)
	}
	if got := c.Bytes(); got != 4<<10 {
		t.Fatalf("once every carried ID expired the cache holds %d bytes, want its table's 4096", got)
	}
}

// IDs added while other goroutines resize the cache back and forth, to
// sizes too small for them, are each refused when used again. The resizes
// start once worker 0 has taken its first 100 IDs in the full-size table
// in the empty full-size table, before anything else runs (they all fit:
// 20 to each subject), so that the run takes IDs before and during the
// resizes however the goroutines are scheduled.
func TestResizeDuringAddsForgetsNothing(t *testing.T) {
	c := New(64 << 10)
	until := t0.Add(5 * time.Minute)
	var wg sync.WaitGroup
	taken := make([][][2]string, 4) // subject and ID, by worker
	started := make(chan struct{})
	for w := range taken {
		wg.Go(func() {
			if w > 0 {
				<-started
			}
			for i := range 2000 {
				subject, id := fmt.Sprint("client-", i%5), fmt.Sprint("jti-", w, "-", i)
				if fresh, full := c.Add(subject, id, until, t0); fresh && full == 0 {
					taken[w] = append(taken[w], [2]string{subject, id})
				}
				if w == 0 && i == 99 {
					close(started)
				}
			}
		})
	}
	wg.Go(func() {
		<-started
		for i := range 200 {
			c.Resize([]int{4 << 10, 64 << 10, 16 << 10}[i%3], t0)
		}
	})
	wg.Wait()
	n := 0
	for _, ids := range taken {
		for _, p := range ids {
			n++
			if fresh, _ := c.Add(p[0], p[1], until, t0); fresh {
				t.Fatalf("%s of %s, taken during the resizes, was taken again", p[1], p[0])
			}
		}
	}
	if len(taken[0]) < 100 {
		t.Fatalf("worker 0 took %d IDs, want its first 100 at least: the run proves little", len(taken[0]))
	}
	t.Logf("%d IDs taken, none forgotten", n)
}

func TestSecondsRoundUp(t *testing.T) {
	for in, want := range map[int64]uint32{0: 0, 1: 1, 999_999_999: 1, 1_000_000_000: 1, 1_000_000_001: 2, -5: 0} {
		if got := seconds(in); got != want {
			t.Errorf("seconds(%d) = %d, want %d", in, got, want)
		}
	}
}
