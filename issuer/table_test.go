package issuer

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"

	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// fill sets every settable field of v, recursively, to a value of its
// own that is not the zero value: what a registration of every field
// looks like.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprint("s", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(fmt.Sprintf(`{"n":%d}`, *n)))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(s.Index(0), n)
		fill(s.Index(1), n)
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Interface: // ClientKeyConfig.Key: the table keeps keys as JWKs
	default:
		panic("fill: a field of kind " + v.Kind().String() + ": teach fill, and the table, about it")
	}
}

// TestEntryKeepsEveryField: an entry of the table gives back every field
// of the registration it was made of, so that a field ClientConfig gains
// cannot be lost between a registry and the client it compiles (issue
// 39's first defect was a second path that lost fields).
func TestEntryKeepsEveryField(t *testing.T) {
	var cc ClientConfig
	n := 0
	fill(reflect.ValueOf(&cc).Elem(), &n)
	for _, e := range []entry{{Config: cc}, {Config: cc, File: true, Epoch: 9}} {
		te, err := encodeEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		tb := (*table)(nil).with([]tableEntry{te}, nil)
		s, i, ok := tb.find(cc.ClientID)
		if !ok {
			t.Fatal("not found")
		}
		got, err := s.entryAt(i)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("the entry gave back\n%+v\nnot\n%+v", got, e)
		}
	}
}

// TestEntryBodies: nil and empty lists, negative and largest numbers
// come back as they went; a body cut short, or one with more after it,
// is an error, never a panic or a half entry.
func TestEntryBodies(t *testing.T) {
	e := entry{Config: ClientConfig{ClientID: "é\x00x", Scopes: []string{}, AccessTokenLifetime: -1,
		PublicKeys: []ClientKeyConfig{{JWK: json.RawMessage{}}}, Epoch: 1<<64 - 1}, Epoch: 1}
	body, err := appendEntry(nil, &e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEntry(body)
	if err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("gave back %#v, %v\nnot %#v", got, err, e)
	}
	if got.Config.SecretHashes != nil || got.Config.Scopes == nil {
		t.Fatal("nil and empty lists are not told apart")
	}
	for n := range len(body) {
		if _, err := decodeEntry(body[:n]); err == nil {
			t.Fatalf("a body cut to %d of %d bytes decodes", n, len(body))
		}
	}
	if _, err := decodeEntry(append(body, 0)); err == nil {
		t.Fatal("a body with a byte more decodes")
	}
	e.Config.PublicKeys[0].Key = "a key in code"
	if _, err := appendEntry(nil, &e); !errors.Is(err, errEntryField) {
		t.Fatalf("a key in code: %v, want errEntryField", err)
	}
}

// TestTableChanges: a table found by exact ID and by ID under ASCII case
// folding (the file's first), changed by replacing, adding and dropping
// entries, with only the shards of the change made anew.
func TestTableChanges(t *testing.T) {
	put := func(id string, file bool) tableEntry {
		te, err := encodeEntry(entry{Config: ClientConfig{ClientID: id}, File: file})
		if err != nil {
			t.Fatal(err)
		}
		return te
	}
	var puts []tableEntry
	for i := range 3000 {
		puts = append(puts, put(fmt.Sprint("client-", i), false))
	}
	puts = append(puts, put("Operator", false), put("operator", true))
	tb := (*table)(nil).with(puts, nil)
	if tb.n != 3002 {
		t.Fatalf("%d entries", tb.n)
	}
	for _, id := range []string{"client-0", "client-2999", "Operator", "operator"} {
		if _, _, ok := tb.find(id); !ok {
			t.Errorf("%s not found", id)
		}
	}
	if _, _, ok := tb.find("OPERATOR"); ok {
		t.Error("found by another case")
	}
	if id, file, ok := tb.folded("OPERATOR"); !ok || id != "operator" || !file {
		t.Errorf("folded: %q %v %v, want the file's operator", id, file, ok)
	}
	next := tb.with([]tableEntry{put("client-7", false), put("new", false)}, []string{"client-8", "nobody"})
	if next.n != 3002 {
		t.Fatalf("after the change: %d entries", next.n)
	}
	if _, _, ok := next.find("client-8"); ok {
		t.Error("a dropped entry is found")
	}
	if _, _, ok := tb.find("client-8"); !ok {
		t.Error("the change changed the table it was made from")
	}
	if tb.bits != next.bits || tb.bits != shardBits(3002) {
		t.Fatalf("laid out in %d shard bits, then %d; want %d", tb.bits, next.bits, shardBits(3002))
	}
	same, total := 0, 0
	for g := range tb.groups {
		for s := range 1 << (tb.bits - tb.bits/2) {
			total++
			if tb.groups[g] != nil && next.groups[g] != nil && tb.groups[g].shards[s] == next.groups[g].shards[s] {
				same++
			}
		}
	}
	if same < total-3 {
		t.Errorf("%d of %d shards shared after a change of 4 entries", same, total)
	}
	// Grown to four times and more what it was laid out for, a table is
	// laid out anew, with every entry kept.
	var more []tableEntry
	for i := range 12_000 {
		more = append(more, put(fmt.Sprint("more-", i), false))
	}
	big := next.with(more, nil)
	if big.bits != shardBits(15_002) || big.n != 15_002 {
		t.Fatalf("grown: %d shard bits, %d entries; want %d, 15002", big.bits, big.n, shardBits(15_002))
	}
	for _, id := range []string{"client-0", "new", "more-11999", "operator"} {
		if _, _, ok := big.find(id); !ok {
			t.Errorf("%s is lost in the layout anew", id)
		}
	}
	if id, file, ok := big.folded("OPERATOR"); !ok || id != "operator" || !file {
		t.Errorf("folded after the layout anew: %q %v %v", id, file, ok)
	}
}

// TestRegisteredClientsAreNotScanned: the heap the garbage collector
// scans grows by at most 16 bytes per registered client (a word of the
// table's, for the client once compiled), whatever each holds: the
// registrations are bytes (issue 41: 11 MiB marked per cycle at 10,000).
// The table's shards are a cost of their own, once: what is measured is
// what 20,000 clients more cost.
func TestRegisteredClientsAreNotScanned(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's memory is no measure of the heap")
	}
	cfg := &Config{Issuer: "https://id.example/ids", EphemeralKey: true, Scopes: []string{"reports.read"}}
	iss, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	scanned := func() uint64 {
		runtime.GC()
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	three := []string{scope.AdminWebAPI, scope.ConnectWebAPI, "reports.read"}
	set := func(n int) uint64 {
		t.Helper()
		hash := secret.HashSHA256("registered-secret").String()
		clients := make([]ClientConfig, n)
		for i := range clients {
			clients[i] = ClientConfig{ClientID: fmt.Sprintf("client-%05d", i), SecretHashes: []string{hash}, Scopes: three, Epoch: uint64(i + 1)}
		}
		if err := iss.SetRegistered(clients, nil); err != nil {
			t.Fatal(err)
		}
		return scanned()
	}
	const n = 20_000
	at1, at2 := set(n), set(2*n)
	per := float64(int64(at2)-int64(at1)) / n
	t.Logf("scanned heap: %d bytes with %d clients, %d with %d: %.1f bytes each", at1, n, at2, 2*n, per)
	if per > 16 {
		t.Errorf("%.1f bytes of scanned heap per registered client, want at most 16", per)
	}
	// The clients are served, each compiled at its first use.
	for _, id := range []string{"client-00000", "client-39999"} {
		if cl := iss.current().client(id); cl == nil || !slices.Equal(cl.scopeList, three) {
			t.Errorf("%s: %+v", id, cl)
		}
	}
}
