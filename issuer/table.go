package issuer

import (
	"encoding/binary"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync/atomic"
)

// The roster's clients, the file's and the registry's alike, are held in
// a table that the garbage collector need not scan: each client's
// registration, encoded, in byte arenas, found by the hashes of their
// IDs, and compiled (by the one path, compiler.client) on its first use
// only. A registry of 100,000 clients, of which a few ask for tokens, is
// then a few megabytes of bytes, not millions of pointers that every
// collection marks (issue 41 measured 11 MiB of client data marked per
// cycle at 10,000 clients: 35,000 instructions a token request). The
// table is made of shards of about shardFill entries, each copied whole
// when one of its clients changes, so that a change costs what its shard
// holds, whatever the table's size; their number follows the table's, so
// that a small table is a few objects for the collector to mark, not
// thousands.

// shardFill is the number of entries a table lays out in a shard.
const shardFill = 64

// maxShardBits bounds a table to 16,384 shards: 61 entries each at a
// million clients.
const maxShardBits = 14

// table is a roster's clients, immutable: with makes a new one.
type table struct {
	seed   maphash.Seed
	bits   uint          // 1<<bits shards, in 1<<(bits/2) groups
	groups []*tableGroup // nil until a shard of theirs holds an entry
	n      int           // entries
}

// tableGroup is 1<<(bits-bits/2) of a table's shards: a change copies
// the groups of its shards, and those shards.
type tableGroup struct{ shards []*shard }

// shard is some of a table's entries: entry i is arena[ends[i-1]:ends[i]]
// (from 0 for the first), and hashes[i] the hash of its folded ID. Entry
// i, compiled, is (*hot)[i], made at its first use, in slots made at the
// shard's first use: the shards of clients that ask for no token hold no
// pointer for the collector to meet.
type shard struct {
	hashes []uint64
	ends   []uint32
	arena  []byte
	hot    atomic.Pointer[[]atomic.Pointer[client]]
}

// entry is what the table keeps of one client: its registration, with
// any key file read into a JWK, whether the configuration file gives it,
// and the issuer's record of its epoch when the registration gives none
// (registered.go).
type entry struct {
	Config ClientConfig
	File   bool
	Epoch  uint64
}

// An entry's bytes: a flags byte, the ID's length as a uvarint, the ID,
// and the entry's body (entrycodec.go).
const (
	flagFile     = 1 << iota // the configuration file's
	flagOwnEpoch             // its registration gives its epoch
)

// foldHash is the hash of id, its ASCII capitals in lower case: the IDs
// one under folding have one hash, so that a clash is found where the ID
// is.
func foldHash(seed maphash.Seed, id string) uint64 {
	var buf [64]byte
	b := buf[:0]
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return maphash.Bytes(seed, b)
}

// shardBits is the shard bits of a table of n entries laid out anew.
func shardBits(n int) uint {
	bits := uint(0)
	for bits < maxShardBits && n > shardFill<<bits {
		bits++
	}
	return bits
}

// key is the number of the shard of hash h.
func (t *table) key(h uint64) uint64 { return h >> (64 - t.bits) } // 0 for 0 bits

// at returns the group and the shard, in its group, of shard k.
func (t *table) at(k uint64) (int, int) {
	low := t.bits - t.bits/2
	return int(k >> low), int(k & (1<<low - 1))
}

func (t *table) shardOf(h uint64) *shard {
	gi, si := t.at(t.key(h))
	if g := t.groups[gi]; g != nil {
		return g.shards[si]
	}
	return nil
}

// raw returns entry i's bytes.
func (s *shard) raw(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.arena[start:s.ends[i]]
}

// head reads entry i's flags, ID and body (the arena's bytes: a token
// request finds its client without an allocation).
func (s *shard) head(i int) (flags byte, id []byte, body []byte) {
	b := s.raw(i)
	n, w := binary.Uvarint(b[1:])
	return b[0], b[1+w : 1+w+int(n)], b[1+w+int(n):]
}

// find returns the shard and index of the entry of id, exactly.
func (t *table) find(id string) (*shard, int, bool) {
	if t == nil {
		return nil, 0, false
	}
	h := foldHash(t.seed, id)
	s := t.shardOf(h)
	if s == nil {
		return nil, 0, false
	}
	for i, eh := range s.hashes {
		if eh != h {
			continue
		}
		if _, eid, _ := s.head(i); string(eid) == id {
			return s, i, true
		}
	}
	return nil, 0, false
}

// folded returns an ID of the table that is id under ASCII case folding,
// the file's first, and whether it is the file's.
func (t *table) folded(id string) (string, bool, bool) {
	if t == nil {
		return "", false, false
	}
	h := foldHash(t.seed, id)
	s := t.shardOf(h)
	if s == nil {
		return "", false, false
	}
	found, file, any := "", false, false
	for i, eh := range s.hashes {
		if eh != h {
			continue
		}
		flags, eid, _ := s.head(i)
		if foldEqual(eid, id) && (!any || flags&flagFile != 0 && !file) {
			found, file, any = string(eid), flags&flagFile != 0, true
		}
	}
	return found, file, any
}

// foldEqual reports whether a and b are one under ASCII case folding.
func foldEqual(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// entryAt decodes entry i.
func (s *shard) entryAt(i int) (entry, error) {
	_, _, body := s.head(i)
	return decodeEntry(body)
}

// slots returns the shard's slots of compiled clients, made at its first
// use.
func (s *shard) slots() []atomic.Pointer[client] {
	if h := s.hot.Load(); h != nil {
		return *h
	}
	h := make([]atomic.Pointer[client], len(s.ends))
	if !s.hot.CompareAndSwap(nil, &h) {
		return *s.hot.Load() // another request made them first
	}
	return h
}

// client returns the client id of r's table, compiled at its first use,
// or nil.
func (r *roster) client(id string) *client {
	s, i, ok := r.table.find(id)
	if !ok {
		return nil
	}
	hot := s.slots()
	if cl := hot[i].Load(); cl != nil {
		return cl
	}
	e, err := s.entryAt(i)
	if err == nil {
		var cl *client
		if cl, err = r.compile(e); err == nil {
			if !hot[i].CompareAndSwap(nil, cl) {
				cl = hot[i].Load() // another request compiled it first
			}
			return cl
		}
	}
	// Checked when it entered the table, the entry compiles: this is a
	// defect, and the client is as unknown.
	if r.k.logger != nil {
		r.k.logger.Error("idsauth issuer: a client of the roster does not compile", slog.String("client_id", id), slog.String("error", err.Error()))
	}
	return nil
}

// with returns a table of t's entries (none when t is nil), without
// those of the IDs of drop and with puts, which replace the entries of
// their IDs: only the shards they fall in are made anew, unless the
// table has grown to four times what its shards were laid out for, when
// it is laid out anew (a cost once per such growth). It sets the hash of
// each of puts.
func (t *table) with(puts []tableEntry, drop []string) *table {
	if t == nil {
		t = newTable(shardBits(len(puts)))
	} else if bits := shardBits(t.n + len(puts)); bits > t.bits+1 {
		all := make([]tableEntry, 0, t.n)
		t.each(func(id []byte, flags byte, body []byte) bool {
			all = append(all, tableEntry{id: string(id), flags: flags, body: body})
			return true
		})
		t = newTable(bits).with(all, nil)
	}
	nt := &table{}
	*nt = *t
	nt.groups = slices.Clone(t.groups)
	// The change by shard: its puts, each shard's in their order, and
	// its drops.
	changes := make([]change, 0, len(puts)+len(drop))
	for i := range puts {
		puts[i].hash = foldHash(nt.seed, puts[i].id)
		changes = append(changes, change{key: nt.key(puts[i].hash), put: &puts[i]})
	}
	for _, id := range drop {
		changes = append(changes, change{key: nt.key(foldHash(nt.seed, id)), drop: id})
	}
	if len(changes) >= 1<<nt.bits/4 { // a load: ordered by counting, in linear time
		at := make([]int, 1<<nt.bits+1)
		for _, c := range changes {
			at[c.key+1]++
		}
		for k := 1; k < len(at); k++ {
			at[k] += at[k-1]
		}
		sorted := make([]change, len(changes))
		for _, c := range changes {
			sorted[at[c.key]] = c
			at[c.key]++
		}
		changes = sorted
	} else {
		slices.SortStableFunc(changes, func(a, b change) int {
			switch {
			case a.key < b.key:
				return -1
			case a.key > b.key:
				return 1
			}
			return 0
		})
	}
	fresh := make([]bool, len(nt.groups)) // the groups this call made
	for len(changes) > 0 {
		n := 1
		for n < len(changes) && changes[n].key == changes[0].key {
			n++
		}
		run := changes[:n]
		changes = changes[n:]
		gi, si := nt.at(run[0].key)
		var old *shard
		if nt.groups[gi] != nil {
			old = nt.groups[gi].shards[si]
		}
		var kept []tableEntry // the old entries that stay, then the puts
		if old != nil {
			kept = make([]tableEntry, 0, len(old.ends)+n)
			for i := range old.ends {
				flags, id, body := old.head(i)
				if !slices.ContainsFunc(run, func(c change) bool { return c.id() == string(id) }) {
					kept = append(kept, tableEntry{id: string(id), flags: flags, body: body, hash: old.hashes[i]})
				}
			}
		} else {
			kept = make([]tableEntry, 0, n)
		}
		stayed := len(kept)
		for _, c := range run {
			if c.put != nil {
				kept = append(kept, *c.put)
			}
		}
		if len(kept) == stayed && (old == nil || stayed == len(old.ends)) {
			continue // it drops only IDs the shard does not hold
		}
		if !fresh[gi] { // t's group, shared: copied once
			ng := &tableGroup{shards: make([]*shard, 1<<(nt.bits-nt.bits/2))}
			if nt.groups[gi] != nil {
				copy(ng.shards, nt.groups[gi].shards)
			}
			nt.groups[gi], fresh[gi] = ng, true
		}
		if old != nil {
			nt.n -= len(old.ends)
		}
		nt.groups[gi].shards[si] = buildShard(kept)
		nt.n += len(kept)
	}
	return nt
}

// change is one entry of a table's change: put, or the ID drop.
type change struct {
	key  uint64
	put  *tableEntry // nil: drop the entry of drop
	drop string
}

// id is the ID the change is about.
func (c change) id() string {
	if c.put != nil {
		return c.put.id
	}
	return c.drop
}

// newTable returns an empty table of 1<<bits shards.
func newTable(bits uint) *table {
	return &table{seed: maphash.MakeSeed(), bits: bits, groups: make([]*tableGroup, 1<<(bits/2))}
}

// buildShard lays entries out in a shard of their own.
func buildShard(entries []tableEntry) *shard {
	if len(entries) == 0 {
		return nil
	}
	size := 0
	for _, e := range entries {
		size += 1 + binary.MaxVarintLen64 + len(e.id) + len(e.body)
	}
	s := &shard{hashes: make([]uint64, len(entries)), ends: make([]uint32, len(entries)), arena: make([]byte, 0, size)}
	for i, e := range entries {
		s.hashes[i] = e.hash
		s.arena = append(s.arena, e.flags)
		s.arena = binary.AppendUvarint(s.arena, uint64(len(e.id)))
		s.arena = append(s.arena, e.id...)
		s.arena = append(s.arena, e.body...)
		s.ends[i] = uint32(len(s.arena))
	}
	return s
}

// each calls fn with each entry's ID, flags and body (the arena's
// bytes: decodeEntry decodes it), until fn returns false.
func (t *table) each(fn func(id []byte, flags byte, body []byte) bool) {
	if t == nil {
		return
	}
	for _, g := range t.groups {
		if g == nil {
			continue
		}
		for _, s := range g.shards {
			if s == nil {
				continue
			}
			for i := range s.ends {
				flags, id, body := s.head(i)
				if !fn(id, flags, body) {
					return
				}
			}
		}
	}
}
