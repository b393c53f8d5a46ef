package issuer

import (
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"log/slog"
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
	Config ClientConfig `json:"c"`
	File   bool         `json:"f,omitempty"`
	Epoch  uint64       `json:"e,omitempty"`
}

// An entry's bytes: the index of the next entry of its hash plus one (0:
// none) as 4 bytes, a flags byte, the ID's length as a uvarint, the ID,
// and the entry as JSON.
const (
	flagFile     = 1 << iota // the configuration file's
	flagOwnEpoch             // its registration gives its epoch
)

// foldHash is the hash of id, its ASCII capitals in lower case: the IDs
// one under folding are in one chain, so that a clash is found where the
// ID is.
func foldHash(seed maphash.Seed, id string) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h.WriteByte(c)
	}
	return h.Sum64()
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

// head reads entry i's chain link, flags and ID.
func (s *shard) head(i uint32) (next uint32, flags byte, id string, body []byte) {
	b := s.raw(i)
	next = binary.LittleEndian.Uint32(b)
	flags = b[4]
	n, w := binary.Uvarint(b[5:])
	id = string(b[5+w : 5+w+int(n)])
	return next, flags, id, b[5+w+int(n):]
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
		if eid == id {
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
	fid := foldASCII(id)
	found, file, any := "", false, false
	i, ok := s.first[h]
	for ok {
		next, flags, eid, _ := s.head(i)
		if foldASCII(eid) == fid && (!any || flags&flagFile != 0 && !file) {
			found, file, any = eid, flags&flagFile != 0, true
		}
		i, ok = next-1, next != 0
	}
	return found, file, any
}

// entryAt decodes entry i.
func (s *shard) entryAt(i uint32) (entry, error) {
	_, _, _, body := s.head(i)
	var e entry
	err := json.Unmarshal(body, &e)
	return e, err
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

// tableEntry is an entry to put in a table: the client compiled from it,
// which gives its flags, and its bytes.
type tableEntry struct {
	id    string
	flags byte
	body  []byte
}

// encode returns e as a tableEntry.
func encodeEntry(e entry) (tableEntry, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return tableEntry{}, err
	}
	var flags byte
	if e.File {
		flags |= flagFile
	}
	if e.Config.Epoch != 0 {
		flags |= flagOwnEpoch
	}
	return tableEntry{id: e.Config.ClientID, flags: flags, body: body}, nil
}

// with returns a table of t's entries (none when t is nil), without
// those of the IDs of drop and with puts, which replace the entries of
// their IDs: only the shards they fall in are made anew.
func (t *table) with(puts []tableEntry, drop []string) *table {
	nt := &table{}
	if t != nil {
		*nt = *t
	} else {
		nt.seed = maphash.MakeSeed()
	}
	type change struct {
		puts []tableEntry
		drop map[string]bool
	}
	changes := map[[2]int]*change{}
	at := func(id string) *change {
		h := foldHash(nt.seed, id)
		k := [2]int{int(h >> 58), int((h >> 52) & (tableFan - 1))}
		c := changes[k]
		if c == nil {
			c = &change{drop: map[string]bool{}}
			changes[k] = c
		}
		return c
	}
	for _, id := range drop {
		at(id).drop[id] = true
	}
	for _, p := range puts {
		c := at(p.id)
		c.drop[p.id] = true // replaced
		c.puts = append(c.puts, p)
	}
	for k, c := range changes {
		g := nt.groups[k[0]]
		ng := &tableGroup{}
		if g != nil {
			*ng = *g
		}
		nt.groups[k[0]] = ng
		old := ng.shards[k[1]]
		var kept []tableEntry
		if old != nil {
			for i := range old.ends {
				_, flags, id, body := old.head(uint32(i))
				if !c.drop[id] {
					kept = append(kept, tableEntry{id: id, flags: flags, body: body})
				}
			}
			nt.n -= len(old.ends)
		}
		kept = append(kept, c.puts...)
		ng.shards[k[1]] = buildShard(nt.seed, kept)
		nt.n += len(kept)
	}
	return nt
}

// buildShard lays entries out in a shard of their own.
func buildShard(seed maphash.Seed, entries []tableEntry) *shard {
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
		h := foldHash(seed, entries[i].id)
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

// each calls fn with each entry's ID and flags, and a function that
// decodes it, until fn returns false.
func (t *table) each(fn func(id string, flags byte, decode func() (entry, error)) bool) {
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
				_, flags, id, _ := s.head(uint32(i))
				if !fn(id, flags, func() (entry, error) { return s.entryAt(uint32(i)) }) {
					return
				}
			}
		}
	}
}
