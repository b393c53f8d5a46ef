package issuer

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decodeStrict is DecodeConfig.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return fieldErr("(file)", "invalid JSON at byte %d: %v", syn.Offset, err)
		case errors.As(err, &typ):
			field, _ := place(data, v, "", typ.Offset)
			if field == "" {
				field = typ.Field
			}
			return fieldErr(field, "wrong type: want %s", typ.Type)
		}
		// encoding/json names an unknown field, not where it is.
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			if unq, qerr := strconv.Unquote(name); qerr == nil {
				field, known := place(data, v, unq, -1)
				if field == "" {
					field = "(file)"
				}
				if near := nearest(unq, known); near != "" {
					return fieldErr(field, "unknown field %q (did you mean %q?)", unq, near)
				}
				return fieldErr(field, "unknown field %q", unq)
			}
		}
		return fieldErr("(file)", "%v", err)
	}
	// A stray "}" closes the object early, and whatever follows it would
	// be dropped without a word: the sections after it included.
	end := int(dec.InputOffset())
	rest := bytes.TrimLeft(data[end:], " \t\r\n")
	if len(rest) > 0 {
		at := len(data) - len(rest)
		line, col := lineCol(data, at)
		endLine, endCol := lineCol(data, end-1)
		if rest[0] == '{' || rest[0] == '[' {
			return fieldErr("(file)", "line %d, column %d: more than one JSON value: another starts after the configuration object, which ends at line %d, column %d", line, col, endLine, endCol)
		}
		return fieldErr("(file)", "line %d, column %d: something follows the configuration object, which ends at line %d, column %d: a \"}\" too many closes it early, and nothing after it would be read", line, col, endLine, endCol)
	}
	return nil
}

// lineCol is the line and column, from 1, of the byte at offset in data;
// the column counts characters.
func lineCol(data []byte, offset int) (line, col int) {
	before := data[:offset]
	start := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte{'\n'}) + 1, utf8.RuneCount(before[start:]) + 1
}

// nearest returns the name among known that name comes nearest, if any
// comes near: the same but for case, "_" and "-", or a few edits away
// ("scope" for "scopes"). encoding/json matches names without regard to
// case, so a name that differs only by case is never unknown.
func nearest(name string, known []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	n := norm(name)
	best, bestDist := "", min(3, max(1, utf8.RuneCountInString(n)/3))+1
	for _, k := range known {
		if norm(k) == n {
			return k
		}
		if d := editDistance(n, norm(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in
// characters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// place finds where in data the decoding into v failed: the path of the
// object holding the unknown field named unknown or, when unknown is
// empty, of the innermost value that ends at offset (a value of the wrong
// type). The path is written as the check's errors write fields, such as
// `clients[2] ("reporting").accessTokenLifetime`; "" means the top level,
// or nowhere found. For an unknown field, known lists the names of the
// fields that object may hold. data is one JSON value, as the decoder read
// it.
func place(data []byte, v any, unknown string, offset int64) (path string, known []string) {
	f := &finder{dec: json.NewDecoder(bytes.NewReader(data)), unknown: unknown, offset: offset}
	var steps []step
	if f.value(reflect.TypeOf(v), &steps) != nil || f.found == nil {
		return "", nil
	}
	if f.object != nil {
		known = fieldNames(f.object)
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
	return b.String(), known
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
	found   []step       // nil: not yet
	object  reflect.Type // the struct holding the unknown field, when found
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
				if ft, ok = fieldType(t, key); !ok && key == f.unknown && f.found == nil {
					f.mark(*path)
					f.object = t
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

// fieldNames returns the names encoding/json decodes into t's fields, in
// their order.
func fieldNames(t reflect.Type) []string {
	var names []string
	for _, sf := range reflect.VisibleFields(t) {
		if !sf.IsExported() || len(sf.Index) > 1 && !embeddedPath(t, sf.Index) {
			continue
		}
		tag := sf.Tag.Get("json")
		if ft := sf.Type; tag == "-" || sf.Anonymous && tag == "" && (ft.Kind() == reflect.Struct || ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		names = append(names, name)
	}
	return names
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
