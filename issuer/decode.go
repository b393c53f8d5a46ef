package issuer

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// place finds where in data the decoding into v failed: the path of the
// object holding the unknown field named unknown or, when unknown is
// empty, of the innermost value that ends at offset (a value of the wrong
// type). The path is written as the check's errors write fields, such as
// `clients[2] ("reporting").accessTokenLifetime`; "" means the top level,
// or nowhere found. data is one JSON value, as the decoder read it.
func place(data []byte, v any, unknown string, offset int64) string {
	f := &finder{dec: json.NewDecoder(bytes.NewReader(data)), unknown: unknown, offset: offset}
	var path []step
	if f.value(reflect.TypeOf(v), &path) != nil || f.found == nil {
		return ""
	}
	var named struct {
		Clients []struct {
			ClientID string `json:"clientId"`
		} `json:"clients"`
	}
	_ = json.Unmarshal(data, &named) // best effort: only names a client
	var b strings.Builder
	for i, s := range f.found {
		switch {
		case s.index >= 0:
			fmt.Fprintf(&b, "[%d]", s.index)
			if i == 1 && f.found[0].key == "clients" && s.index < len(named.Clients) && named.Clients[s.index].ClientID != "" {
				fmt.Fprintf(&b, " (%q)", named.Clients[s.index].ClientID)
			}
		case i == 0:
			b.WriteString(s.key)
		default:
			b.WriteString("." + s.key)
		}
	}
	return b.String()
}

// step is one element of a path: an object's field, or an array's index.
type step struct {
	key   string
	index int // -1 for a field
}

type finder struct {
	dec     *json.Decoder
	unknown string
	offset  int64
	found   []step // nil: not yet
}

func (f *finder) mark(path []step) {
	if f.found == nil {
		f.found = append([]step{}, path...)
	}
}

var unmarshalers = []reflect.Type{
	reflect.TypeFor[json.Unmarshaler](),
	reflect.TypeFor[encoding.TextUnmarshaler](),
}

// value walks one JSON value whose Go type is t (nil when it is not known:
// its content is not checked) at path, marking the place sought.
func (f *finder) value(t reflect.Type, path *[]step) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, u := range unmarshalers {
		if t != nil && reflect.PointerTo(t).Implements(u) {
			t = nil // decoded by its own method: opaque here
		}
	}
	start := f.dec.InputOffset()
	tok, err := f.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		for f.dec.More() {
			kt, err := f.dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			var ft reflect.Type
			switch {
			case t != nil && t.Kind() == reflect.Struct:
				var ok bool
				if ft, ok = fieldType(t, key); !ok && key == f.unknown {
					f.mark(*path)
				}
			case t != nil && t.Kind() == reflect.Map:
				ft = t.Elem()
			}
			*path = append(*path, step{key: key, index: -1})
			if err := f.value(ft, path); err != nil {
				return err
			}
			*path = (*path)[:len(*path)-1]
		}
		if _, err := f.dec.Token(); err != nil { // '}'
			return err
		}
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; f.dec.More(); i++ {
			*path = append(*path, step{index: i})
			if err := f.value(et, path); err != nil {
				return err
			}
			*path = (*path)[:len(*path)-1]
		}
		if _, err := f.dec.Token(); err != nil { // ']'
			return err
		}
	}
	// Children are walked first, so the innermost value holding the offset
	// is marked.
	if f.unknown == "" && start <= f.offset && f.offset <= f.dec.InputOffset() {
		f.mark(*path)
	}
	return nil
}

// fieldType returns the type of t's field that encoding/json decodes key
// into, as it matches them: by the json tag's name, else the field's,
// preferring an exact match to one without regard to case, through
// embedded structs.
func fieldType(t reflect.Type, key string) (reflect.Type, bool) {
	var fold reflect.Type
	for _, sf := range reflect.VisibleFields(t) {
		if !sf.IsExported() || len(sf.Index) > 1 && !embeddedPath(t, sf.Index) {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		if ft := sf.Type; sf.Anonymous && tag == "" && (ft.Kind() == reflect.Struct || ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct) {
			continue // its fields are visible themselves
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		if name == key {
			return sf.Type, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = sf.Type
		}
	}
	return fold, fold != nil
}

// embeddedPath reports whether the field at index is reached through
// anonymous struct fields without a json name, as encoding/json flattens
// them.
func embeddedPath(t reflect.Type, index []int) bool {
	for _, i := range index[:len(index)-1] {
		sf := t.Field(i)
		if !sf.Anonymous || sf.Tag.Get("json") != "" {
			return false
		}
		t = sf.Type
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	return true
}
