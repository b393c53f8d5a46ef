package jws

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/idsauth/idsauth/internal/jsonscan"
)

// Claims is a JWT's claim set split into its members, each the JSON of its
// value by its exact name, without trusting any of it: the one reader of
// claims behind access tokens, introspection answers, client assertions
// and DPoP proofs. Its rules are those of RFC 7519 §4 and §7.2, held the
// same way for every caller:
//
//   - member names are matched exactly, case included ("EXP" is not
//     "exp"), after their JSON escapes are undone ("\u0065xp" is "exp");
//   - a name given twice makes the whole set malformed (§4: such a JWT is
//     rejected or the last one taken; a parser that takes the first and
//     one that takes the last would disagree about one token);
//   - null is absent: a member whose value is null reads as no member;
//   - a NumericDate is a JSON number of seconds, fractions allowed, within
//     years 1 to 9999, so that no reading overflows time.Time.
//
// The values are slices of the payload: nothing is copied until a typed
// accessor decodes one.
type Claims struct {
	members []member
}

type member struct {
	name  []byte // unescaped
	value []byte // the value's JSON, not null
}

// maxLinearMembers is how many members are checked for duplicates pair by
// pair; a larger set is checked with a map.
const maxLinearMembers = 32

// ReadClaims splits payload, a JSON object, into its members. It fails
// with ErrMalformed for anything else (null included) and for an object
// that names a member twice.
func ReadClaims(payload []byte) (Claims, error) {
	if !jsonscan.Valid(payload) {
		return Claims{}, ErrMalformed
	}
	i := jsonscan.SkipSpace(payload, 0)
	if payload[i] != '{' {
		return Claims{}, ErrMalformed
	}
	var c Claims
	c.members = make([]member, 0, 16)
	for i = jsonscan.SkipSpace(payload, i+1); payload[i] != '}'; {
		end := jsonscan.StringEnd(payload, i)
		name, err := unquote(payload[i:end])
		if err != nil {
			return Claims{}, ErrMalformed
		}
		i = jsonscan.SkipSpace(payload, end) + 1 // the colon
		i = jsonscan.SkipSpace(payload, i)
		end = jsonscan.ValueEnd(payload, i)
		if v := payload[i:end]; string(v) != "null" {
			c.members = append(c.members, member{name: name, value: v})
		} else {
			// Kept for the duplicate check, with no value.
			c.members = append(c.members, member{name: name})
		}
		i = jsonscan.SkipSpace(payload, end)
		if payload[i] == ',' {
			i = jsonscan.SkipSpace(payload, i+1)
		}
	}
	if c.duplicated() {
		return Claims{}, ErrMalformed
	}
	return c, nil
}

// duplicated reports whether two members have one name.
func (c Claims) duplicated() bool {
	if len(c.members) <= maxLinearMembers {
		for i := range c.members {
			for j := i + 1; j < len(c.members); j++ {
				if bytes.Equal(c.members[i].name, c.members[j].name) {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]bool, len(c.members))
	for _, m := range c.members {
		if seen[string(m.name)] {
			return true
		}
		seen[string(m.name)] = true
	}
	return false
}

// Raw returns the JSON of claim name's value; false when it is absent or
// null.
func (c Claims) Raw(name string) (json.RawMessage, bool) {
	v, ok := c.lookup(name)
	return v, ok && v != nil
}

// lookup returns the JSON of member name's value, nil for null, and
// whether the object names it at all.
func (c Claims) lookup(name string) (json.RawMessage, bool) {
	for _, m := range c.members {
		if string(m.name) == name {
			return m.value, true
		}
	}
	return nil, false
}

// Has reports whether claim name is present and not null.
func (c Claims) Has(name string) bool {
	_, ok := c.Raw(name)
	return ok
}

// Each calls fn with every member that is not null, in the order of the
// payload, until fn returns an error, which Each returns.
func (c Claims) Each(fn func(name string, value json.RawMessage) error) error {
	for _, m := range c.members {
		if m.value == nil {
			continue
		}
		if err := fn(string(m.name), m.value); err != nil {
			return err
		}
	}
	return nil
}

// String returns claim name when it is a JSON string. present is false
// when it is absent or null; a value of another type fails with
// ErrMalformed.
func (c Claims) String(name string) (s string, present bool, err error) {
	v, ok := c.Raw(name)
	if !ok {
		return "", false, nil
	}
	s, err = stringValue(v)
	return s, true, err
}

// Strings returns claim name when it is a string or an array of strings,
// as "aud" may be (RFC 7519 §4.1.3): one string is a list of one. present
// is false when it is absent or null; anything else fails with
// ErrMalformed.
func (c Claims) Strings(name string) (list []string, present bool, err error) {
	v, ok := c.Raw(name)
	if !ok {
		return nil, false, nil
	}
	list, err = StringOrStrings(v)
	return list, true, err
}

// Time returns claim name when it is a NumericDate (see Claims). present
// is false when it is absent or null; anything else fails with
// ErrMalformed.
func (c Claims) Time(name string) (t time.Time, present bool, err error) {
	v, ok := c.Raw(name)
	if !ok {
		return time.Time{}, false, nil
	}
	t, err = NumericDate(v)
	return t, true, err
}

// Uint53 returns claim name when it is a whole JSON number from 0 to
// 2^53-1, written without fraction or exponent, the integers every JSON
// reader reads exactly; zero when it is absent or null. Anything else
// fails with ErrMalformed.
func (c Claims) Uint53(name string) (uint64, error) {
	v, ok := c.Raw(name)
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil || n >= 1<<53 || (len(v) > 1 && v[0] == '0') {
		return 0, ErrMalformed
	}
	return n, nil
}

// The range of a NumericDate: years 1 to 9999, as in RFC 3339. Wider
// values are refused rather than overflow time.Time or int64 arithmetic
// (1e19 and 1e300 are valid JSON numbers).
const (
	minNumericDate = -62135596800 // 0001-01-01T00:00:00Z
	maxNumericDate = 253402300799 // 9999-12-31T23:59:59Z
)

// NumericDate reads v, a JSON value, as a NumericDate (see Claims), or
// fails with ErrMalformed.
func NumericDate(v json.RawMessage) (time.Time, error) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return time.Time{}, ErrMalformed
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsNaN(f) || f < minNumericDate || f > maxNumericDate {
		return time.Time{}, ErrMalformed
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

// StringOrStrings reads v, a JSON value, as a string or an array of
// strings; null is none. Anything else fails with ErrMalformed.
func StringOrStrings(v json.RawMessage) ([]string, error) {
	switch {
	case string(v) == "null":
		return nil, nil
	case len(v) > 0 && v[0] == '"':
		s, err := stringValue(v)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	case len(v) > 0 && v[0] == '[':
		var list []string
		if json.Unmarshal(v, &list) != nil {
			return nil, ErrMalformed
		}
		return list, nil
	}
	return nil, ErrMalformed
}

// stringValue decodes v, which must be a JSON string.
func stringValue(v json.RawMessage) (string, error) {
	if len(v) < 2 || v[0] != '"' {
		return "", ErrMalformed
	}
	b, err := unquote(v)
	return string(b), err
}

// unquote returns the bytes of q, a valid JSON string: a slice of q itself
// when it is plain ASCII without escapes (the usual claim), else decoded
// as encoding/json decodes it (invalid UTF-8 becomes U+FFFD).
func unquote(q []byte) ([]byte, error) {
	inner := q[1 : len(q)-1]
	plain := true
	for _, b := range inner {
		if b == '\\' || b >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return inner, nil
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return nil, ErrMalformed
	}
	return []byte(s), nil
}
