package issuer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/idsauth/idsauth/internal/jsonscan"
)

// The strict decoding of the configuration file, by its shape (file.go):
// one JSON value and nothing after it; each object's members by name, an
// unknown one named with the nearest known name; each value by its own
// decoder, or by encoding/json for a plain Go value; an error named by
// the value's place in the file.

// oneValue returns the one JSON value data holds, refusing bad JSON and
// anything but white space after it: a stray "}" closes the object early,
// and whatever follows it would be dropped without a word.
func oneValue(data []byte) (json.RawMessage, error) {
	if jsonscan.Valid(data) { // the rest explains what is wrong
		return bytes.Trim(data, " \t\r\n"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fieldErr("(file)", "invalid JSON at byte %d: %v", syn.Offset, err)
		}
		return nil, fieldErr("(file)", "%v", err)
	}
	end := int(dec.InputOffset())
	rest := bytes.TrimLeft(data[end:], " \t\r\n")
	if len(rest) > 0 {
		at := len(data) - len(rest)
		line, col := lineCol(data, at)
		endLine, endCol := lineCol(data, end-1)
		if rest[0] == '{' || rest[0] == '[' {
			return nil, fieldErr("(file)", "line %d, column %d: more than one JSON value: another starts after the configuration object, which ends at line %d, column %d", line, col, endLine, endCol)
		}
		return nil, fieldErr("(file)", "line %d, column %d: something follows the configuration object, which ends at line %d, column %d: a \"}\" too many closes it early, and nothing after it would be read", line, col, endLine, endCol)
	}
	return raw, nil
}

// lineCol is the line and column, from 1, of the byte at offset in data;
// the column counts characters.
func lineCol(data []byte, offset int) (line, col int) {
	before := data[:offset]
	start := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte{'\n'}) + 1, utf8.RuneCount(before[start:]) + 1
}

// A value of the file is decoded by its decodeFile, from raw, one JSON
// value, at path (as the check's errors name fields: "limits.trustedProxies",
// `clients[2] ("reporting").scope`; "" for the top). A plain pointer
// (*string, *bool, *int, *int64, *[]string, *json.RawMessage) is decoded
// by encoding/json.
type fileValue interface {
	decodeFile(raw json.RawMessage, path string) error
}

// object is a JSON object of the file: its members.
type object []member

// member is one member of an object: its name in the file, and its value
// (a fileValue, or a plain pointer).
type member struct {
	name string
	into any
}

// decodeFile decodes the members of the object raw in their order; one
// the object does not have is an error, as is a value of the wrong type.
// Member names match as encoding/json matches them: exactly, else without
// regard to case. A member given twice takes its last value.
func (o object) decodeFile(raw json.RawMessage, path string) error {
	switch raw[0] { // raw is one valid JSON value, from oneValue
	case 'n':
		return nil // null: nothing
	case '{':
	default:
		return fieldErr(place(path), "wrong type: want an object")
	}
	return eachMember(raw, func(quoted, v []byte) error {
		m, exact := o.find(quoted)
		if m == nil {
			name := memberName(quoted)
			if near := nearest(name, o.names()); near != "" {
				return fieldErr(place(path), "unknown field %q (did you mean %q?)", name, near)
			}
			return fieldErr(place(path), "unknown field %q", name)
		}
		written := m.name
		if !exact {
			written = memberName(quoted)
		}
		if plainValue(v, m.into) { // its path, made for an error only, is not made
			return nil
		}
		return decodeValue(v, m.into, join(path, written))
	})
}

// find returns the member of the name quoted, a JSON string, and
// whether it has that name exactly, not only without regard to case.
func (o object) find(quoted []byte) (*member, bool) {
	name, ok := plainString(quoted)
	if !ok {
		name = []byte(memberName(quoted))
	}
	for i := range o {
		if o[i].name == string(name) {
			return &o[i], true
		}
	}
	for i := range o {
		if bytes.EqualFold([]byte(o[i].name), name) {
			return &o[i], false
		}
	}
	return nil, false
}

func (o object) names() []string {
	names := make([]string, len(o))
	for i, m := range o {
		names[i] = m.name
	}
	return names
}

// decodeValue decodes raw into v: a fileValue, or a plain pointer.
func decodeValue(raw json.RawMessage, v any, path string) error {
	if fv, ok := v.(fileValue); ok {
		return fv.decodeFile(raw, path)
	}
	if plainValue(raw, v) {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return fieldErr(place(path), "wrong type: want %s", typ.Type)
		}
		return fieldErr(place(path), "%v", err)
	}
	return nil
}

// place is path as a ConfigError names it.
func place(path string) string {
	if path == "" {
		return "(file)"
	}
	return path
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// objectList is an array of objects of the file, decoded into a slice of
// Go values, each by its shape; named, when not nil, names an element in
// errors by what it holds (a client by its clientId).
type objectList[T any] struct {
	s     *[]T
	shape func(*T) object
	named func(json.RawMessage) string
}

func objects[T any](s *[]T, shape func(*T) object, named func(json.RawMessage) string) objectList[T] {
	return objectList[T]{s, shape, named}
}

func (l objectList[T]) decodeFile(raw json.RawMessage, path string) error {
	switch raw[0] { // raw is one valid JSON value, from oneValue
	case 'n':
		*l.s = nil
		return nil
	case '[':
	default:
		return fieldErr(place(path), "wrong type: want an array")
	}
	var elems [][2]int // where each element starts and ends in raw
	_ = eachElement(raw, func(start int, e []byte) error {
		elems = append(elems, [2]int{start, start + len(e)})
		return nil
	})
	out := make([]T, len(elems))
	// One shape for every element: each is decoded into one, zeroed
	// first, and copied out. A shape is a dozen allocations, and a
	// registry's load decodes a list of 100,000 clients.
	var one T
	shape := l.shape(&one)
	for i, at := range elems {
		e := raw[at[0]:at[1]]
		path := path + "[" + strconv.Itoa(i) + "]"
		one = *new(T)
		err := shape.decodeFile(e, path)
		out[i] = one
		var ce *ConfigError
		if errors.As(err, &ce) && l.named != nil {
			if name := l.named(e); name != "" {
				ce.Field = fmt.Sprintf("%s (%q)", path, name) + strings.TrimPrefix(ce.Field, path)
			}
		}
		if err != nil {
			return err
		}
	}
	*l.s = out
	return nil
}

// section is a member of the file that is not the issuer's: a service's
// own settings, decoded by encoding/json into v, a pointer.
type section struct{ v any }

// decodeFile decodes raw into s.v strictly. An unknown field is found
// without reading encoding/json's error text: it is the first member of
// raw, in the order of the text, whose keeping makes the decoding fail
// where the same decoding that allows unknown fields does not.
func (s section) decodeFile(raw json.RawMessage, path string) error {
	err := strictly(raw, s.v, true)
	if err == nil {
		return nil
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fieldErr(below(path, typ.Field), "wrong type: want %s", typ.Type)
	}
	if lenient := strictly(raw, s.v, false); lenient != nil {
		return fieldErr(path, "%v", lenient)
	}
	fails := func(keep int) bool {
		v := reflect.New(reflect.TypeOf(s.v).Elem()).Interface() // a fresh one each time
		pruned := prune(raw, keep, nil)
		return strictly(pruned, v, true) != nil && strictly(pruned, v, false) == nil
	}
	var members []string
	prune(raw, -1, &members)
	// fails is false for none kept and true for all: the first member
	// whose keeping makes it true is the unknown one.
	lo, hi := 0, len(members)
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid + 1) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == len(members) {
		return fieldErr(path, "%v", err)
	}
	at, name, _ := strings.Cut(members[lo], "\t")
	return fieldErr(below(path, at), "unknown field %q", name)
}

// strictly decodes raw into v with encoding/json, refusing unknown fields
// when strict.
func strictly(raw []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(v)
}

// prune returns raw with only its first keep object members, in the
// order of the text (all of them for keep < 0), and appends to places, when
// not nil, each member's place: its object's path, a tab, its name.
func prune(raw []byte, keep int, places *[]string) []byte {
	p := &pruner{dec: json.NewDecoder(bytes.NewReader(raw)), keep: keep, places: places}
	p.dec.UseNumber()
	p.value("", true)
	return p.out
}

type pruner struct {
	dec    *json.Decoder
	keep   int // members kept; < 0: all
	n      int // members seen
	places *[]string
	out    []byte
}

// value copies the next value to p.out when keep is set, else skips it.
func (p *pruner) value(path string, keep bool) {
	tok, _ := p.dec.Token()
	switch tok {
	case json.Delim('{'):
		p.write(keep, "{")
		first := true
		for p.dec.More() {
			key, _ := p.dec.Token()
			name, _ := key.(string)
			if p.places != nil {
				*p.places = append(*p.places, path+"\t"+name)
			}
			kept := keep && (p.keep < 0 || p.n < p.keep)
			p.n++
			if kept {
				if !first {
					p.write(true, ",")
				}
				first = false
				k, _ := json.Marshal(name)
				p.write(true, string(k)+":")
			}
			p.value(join(path, name), kept)
		}
		_, _ = p.dec.Token()
		p.write(keep, "}")
	case json.Delim('['):
		p.write(keep, "[")
		for i := 0; p.dec.More(); i++ {
			if i > 0 {
				p.write(keep, ",")
			}
			p.value(fmt.Sprintf("%s[%d]", path, i), keep)
		}
		_, _ = p.dec.Token()
		p.write(keep, "]")
	default:
		b, _ := json.Marshal(tok) // a json.Number keeps its text
		p.write(keep, string(b))
	}
}

func (p *pruner) write(keep bool, s string) {
	if keep {
		p.out = append(p.out, s...)
	}
}

// below is the place at, a path below path ("[1].redis", "redis").
func below(path, at string) string {
	if at == "" || at[0] == '[' {
		return path + at
	}
	return path + "." + at
}

// nearest returns the name among known that name comes nearest, if any
// comes near: the same but for case, "_" and "-", or a few edits away
// ("scope" for "scopes"). Names match without regard to case, so a name
// that differs only by case is never unknown.
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
