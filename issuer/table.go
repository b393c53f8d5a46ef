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
// registration, encoded, in byte arenas, found by a map of integers, and
// compiled (by the one path, compiler.client) on its first use only. A
// registry of 100,000 clients, of which a few ask for tokens, is then a
// few megabytes of bytes, not millions of pointers that every collection
// marks (issue 41 measured 11 MiB of client data marked per cycle at
// 10,000 clients: 35,000 instructions a token request). The table is
// made of shards, each copied whole when one of its clients changes, so
// that a change costs what its shard holds, whatever the table's size.

// tableFan is the number of groups of a table, and of shards of a group:
// 4,096 shards, about 25 clients each at 100,000.
const tableFan = 64

// table is a roster's clients, immutable: with makes a new one.
type table struct {
	seed   maphash.Seed
	groups [tableFan]*tableGroup
	n      int // entries
}

type tableGroup struct{ shards [tableFan]*shard }

// shard is some of a table's entries: entry i is arena[ends[i-1]:ends[i]]
// (from 0 for the first), found by first, the map from the hash of a
// folded ID to the first entry of that hash, and the next ones chained
// from it. Entry i, compiled, is hot[i], made at its first use; the
// pointers are the only ones the collector meets, one word per entry,
// nil until then.
type shard struct {
	first map[uint64]uint32
	ends  []uint32
	arena []byte
	hot   []atomic.Pointer[client]
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

// An entry's bytes: the index of the next entry of its hash plus one (0:
// none) as 4 bytes, a flags byte, the ID's length as a uvarint, the ID,
// and the entry's body (entrycodec.go).
const (
	flagFile     = 1 << iota // the configuration file's
	flagOwnEpoch             // its registration gives its epoch
)

// foldHash is the hash of id, its ASCII capitals in lower case: the IDs
// one under folding are in one chain, so that a clash is found where the
// ID is.
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

func (t *table) shardOf(h uint64) *shard {
	g := t.groups[h>>58]
	if g == nil {
		return nil
	}
	return g.shards[(h>>52)&(tableFan-1)]
}

// raw returns entry i's bytes.
func (s *shard) raw(i uint32) []byte {
	start := uint32(0)
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.arena[start:s.ends[i]]
}

// head reads entry i's chain link, flags and ID (the arena's bytes: a
// token request finds its client without an allocation).
func (s *shard) head(i uint32) (next uint32, flags byte, id []byte, body []byte) {
	b := s.raw(i)
	next = binary.LittleEndian.Uint32(b)
	flags = b[4]
	n, w := binary.Uvarint(b[5:])
	return next, flags, b[5+w : 5+w+int(n)], b[5+w+int(n):]
}

// find returns the shard and index of the entry of id, exactly.
func (t *table) find(id string) (*shard, uint32, bool) {
	if t == nil {
		return nil, 0, false
	}
	h := foldHash(t.seed, id)
	s := t.shardOf(h)
	if s == nil {
		return nil, 0, false
	}
	i, ok := s.first[h]
	for ok {
		next, _, eid, _ := s.head(i)
		if string(eid) == id {
			return s, i, true
		}
		i, ok = next-1, next != 0
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
	i, ok := s.first[h]
	for ok {
		next, flags, eid, _ := s.head(i)
		if foldEqual(eid, id) && (!any || flags&flagFile != 0 && !file) {
			found, file, any = string(eid), flags&flagFile != 0, true
		}
		i, ok = next-1, next != 0
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
func (s *shard) entryAt(i uint32) (entry, error) {
	_, _, _, body := s.head(i)
	return decodeEntry(body)
}

// client returns the client id of r's table, compiled at its first use,
// or nil.
func (r *roster) client(id string) *client {
	s, i, ok := r.table.find(id)
	if !ok {
		return nil
	}
	if cl := s.hot[i].Load(); cl != nil {
		return cl
	}
	e, err := s.entryAt(i)
	if err == nil {
		var cl *client
		if cl, err = r.compile(e); err == nil {
			if !s.hot[i].CompareAndSwap(nil, cl) {
				cl = s.hot[i].Load() // another request compiled it first
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

// tableEntry is an entry to put in a table: its ID, its flags and its
// body; hash is foldHash of the ID, once known.
type tableEntry struct {
	id    string
	flags byte
	body  []byte
	hash  uint64
}

// encodeEntry returns e as a tableEntry.
func encodeEntry(e entry) (tableEntry, error) {
	var b entryBodies
	return b.encode(e)
}

// entryBodies holds the entryBodies of the entries of one change, one after the
// other: a load of 100,000 clients makes a few dozen allocations of them,
// not 100,000.
type entryBodies struct{ buf []byte }

// encode returns e as a tableEntry, its body in b.
func (b *entryBodies) encode(e entry) (tableEntry, error) {
	if cap(b.buf)-len(b.buf) < 1<<10 { // a new block, the bodies of the old one left where they are
		b.buf = make([]byte, 0, 64<<10)
	}
	start := len(b.buf)
	buf, err := appendEntry(b.buf, &e)
	if err != nil {
		return tableEntry{}, err
	}
	b.buf = buf
	var flags byte
	if e.File {
		flags |= flagFile
	}
	if e.Config.Epoch != 0 {
		flags |= flagOwnEpoch
	}
	return tableEntry{id: e.Config.ClientID, flags: flags, body: buf[start:len(buf):len(buf)]}, nil
}

// with returns a table of t's entries (none when t is nil), without
// those of the IDs of drop and with puts, which replace the entries of
// their IDs: only the shards they fall in are made anew. It sets the
// hash of each of puts.
func (t *table) with(puts []tableEntry, drop []string) *table {
	nt := &table{}
	if t != nil {
		*nt = *t
	} else {
		nt.seed = maphash.MakeSeed()
	}
	const shards = tableFan * tableFan
	// puts by shard, each shard's in their order (a counting sort):
	// those of shard k are byShard[from[k]:from[k+1]].
	var from [shards + 1]int32
	for i := range puts {
		puts[i].hash = foldHash(nt.seed, puts[i].id)
		from[puts[i].hash>>52+1]++
	}
	for k := range shards {
		from[k+1] += from[k]
	}
	byShard := make([]tableEntry, len(puts))
	next := from
	for _, p := range puts {
		byShard[next[p.hash>>52]] = p
		next[p.hash>>52]++
	}
	drops := map[uint64][]string{}
	for _, id := range drop {
		k := foldHash(nt.seed, id) >> 52
		drops[k] = append(drops[k], id)
	}
	var fresh [tableFan]bool // the groups made by this call
	for k := range uint64(shards) {
		in := byShard[from[k]:from[k+1]]
		if len(in) == 0 && drops[k] == nil {
			continue
		}
		gi, si := k>>6, k&(tableFan-1)
		var old *shard
		if nt.groups[gi] != nil {
			old = nt.groups[gi].shards[si]
		}
		if old == nil && len(in) == 0 {
			continue // it drops only IDs the shard does not hold
		}
		var kept []tableEntry
		if old != nil {
			gone := drops[k]
			for _, p := range in {
				gone = append(gone, p.id) // replaced
			}
			for i := range old.ends {
				_, flags, id, body := old.head(uint32(i))
				if !slices.Contains(gone, string(id)) {
					kept = append(kept, tableEntry{id: string(id), flags: flags, body: body, hash: foldHash(nt.seed, string(id))})
				}
			}
			if len(in) == 0 && len(kept) == len(old.ends) {
				continue // it drops only IDs the shard does not hold
			}
			nt.n -= len(old.ends)
		}
		if !fresh[gi] { // t's group, shared: copied once
			ng := &tableGroup{}
			if nt.groups[gi] != nil {
				*ng = *nt.groups[gi]
			}
			nt.groups[gi], fresh[gi] = ng, true
		}
		kept = append(kept, in...)
		nt.groups[gi].shards[si] = buildShard(kept)
		nt.n += len(kept)
	}
	return nt
}

// buildShard lays entries out in a shard of their own.
func buildShard(entries []tableEntry) *shard {
	if len(entries) == 0 {
		return nil
	}
	size := 0
	for _, e := range entries {
		size += 5 + binary.MaxVarintLen64 + len(e.id) + len(e.body)
	}
	s := &shard{first: make(map[uint64]uint32, len(entries)), ends: make([]uint32, len(entries)),
		arena: make([]byte, 0, size), hot: make([]atomic.Pointer[client], len(entries))}
	// Chained last to first, so that an earlier entry comes first.
	for i := len(entries) - 1; i >= 0; i-- {
		h := entries[i].hash
		next, ok := s.first[h]
		if ok {
			next++
		}
		s.first[h] = uint32(i)
		s.ends[i] = next // the link, for now
	}
	for i, e := range entries {
		s.arena = binary.LittleEndian.AppendUint32(s.arena, s.ends[i])
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
				_, flags, id, body := s.head(uint32(i))
				if !fn(id, flags, body) {
					return
				}
			}
		}
	}
}
