package issuer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
)

// An entry's body in the table: its fields in their order, each by its
// kind, walked by reflection so that a field ClientConfig gains is kept
// without a word here (TestEntryKeepsEveryField fills every one). A
// string or a []byte is its length as a uvarint and its bytes; a slice is
// its length plus one (0: nil) and its elements; a bool one byte; an
// integer a varint; a struct its fields. encoding/json did this first,
// and cost more than anything else a registry's load does per client
// (BenchmarkLoad in pgregistry): 2 µs of its 5.
//
// A field of any other kind (a map, a pointer, an interface) cannot be
// kept: the one interface, ClientKeyConfig.Key, is kept as its JWK
// (client.entryOf), and must be nil here.

// errEntryField is an entry with a field the table cannot keep.
var errEntryField = errors.New("issuer: a client's field the table cannot keep")

// appendEntry appends e's body to b.
func appendEntry(b []byte, e *entry) ([]byte, error) {
	return appendField(b, reflect.ValueOf(e).Elem())
}

func appendField(b []byte, v reflect.Value) ([]byte, error) {
	var err error
	switch v.Kind() {
	case reflect.String:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		return append(b, v.String()...), nil
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(b, v.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return binary.AppendUvarint(b, v.Uint()), nil
	case reflect.Slice:
		if v.IsNil() {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(v.Len())+1)
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return append(b, v.Bytes()...), nil
		}
		for i := range v.Len() {
			if b, err = appendField(b, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return b, nil
	case reflect.Struct:
		for i := range v.NumField() {
			if b, err = appendField(b, v.Field(i)); err != nil {
				return nil, err
			}
		}
		return b, nil
	case reflect.Interface:
		if v.IsNil() {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", errEntryField, v.Type())
}

// decodeEntry decodes an entry's body.
func decodeEntry(body []byte) (entry, error) {
	var e entry
	rest, err := readField(body, reflect.ValueOf(&e).Elem())
	if err == nil && len(rest) > 0 {
		err = errBadEntry
	}
	return e, err
}

// errBadEntry is a body that is not an entry's: a defect.
var errBadEntry = errors.New("issuer: a table entry does not decode")

func readField(b []byte, v reflect.Value) ([]byte, error) {
	uvarint := func() (uint64, bool) {
		n, w := binary.Uvarint(b)
		if w <= 0 {
			return 0, false
		}
		b = b[w:]
		return n, true
	}
	var err error
	switch v.Kind() {
	case reflect.String:
		n, ok := uvarint()
		if !ok || n > uint64(len(b)) {
			return nil, errBadEntry
		}
		v.SetString(string(b[:n]))
		return b[n:], nil
	case reflect.Bool:
		if len(b) == 0 {
			return nil, errBadEntry
		}
		v.SetBool(b[0] == 1)
		return b[1:], nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, w := binary.Varint(b)
		if w <= 0 {
			return nil, errBadEntry
		}
		v.SetInt(n)
		return b[w:], nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := uvarint()
		if !ok {
			return nil, errBadEntry
		}
		v.SetUint(n)
		return b, nil
	case reflect.Slice:
		n, ok := uvarint()
		if !ok || n > uint64(len(b))+1 { // every element takes a byte at least
			return nil, errBadEntry
		}
		if n == 0 {
			return b, nil // nil
		}
		n--
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(append(make([]byte, 0, n), b[:n]...))
			return b[n:], nil
		}
		s := reflect.MakeSlice(v.Type(), int(n), int(n))
		for i := range int(n) {
			if b, err = readField(b, s.Index(i)); err != nil {
				return nil, err
			}
		}
		v.Set(s)
		return b, nil
	case reflect.Struct:
		for i := range v.NumField() {
			if b, err = readField(b, v.Field(i)); err != nil {
				return nil, err
			}
		}
		return b, nil
	case reflect.Interface:
		return b, nil // kept only nil
	}
	return nil, errBadEntry
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

// entryBodies holds the bodies of the entries of one change, one after
// the other in blocks of 2 KiB, each twice the last up to 64 KiB: a load
// of 100,000 clients makes a few hundred allocations of them, not
// 100,000, and a change of one client one small block.
type entryBodies struct{ buf []byte }

// encode returns e as a tableEntry, its body in b.
func (b *entryBodies) encode(e entry) (tableEntry, error) {
	if cap(b.buf)-len(b.buf) < 1<<10 { // a new block, the bodies of the old one left where they are
		b.buf = make([]byte, 0, min(64<<10, max(2<<10, 2*cap(b.buf))))
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
