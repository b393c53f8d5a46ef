package issuer

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/idsauth/idsauth/internal/jsonscan"
)

// Walking JSON already checked valid (oneValue checks the whole file
// once), without encoding/json's state machine or its copies: a registry
// decodes each of its clients with the file's decoder at every load, and
// 100,000 clients walked by json.Decoder's tokens cost more than all else
// the load does (BenchmarkLoad in pgregistry). Anything not plainly one
// of the few shapes these functions know goes to encoding/json, so that
// what a value decodes to is always what encoding/json makes of it;
// FuzzScanAgreesWithEncodingJSON holds them to it.

// eachMember calls fn with the quoted name and the value of each member
// of obj, a valid JSON object, in their order, until fn returns an error.
func eachMember(obj []byte, fn func(quoted, value []byte) error) error {
	i := jsonscan.SkipSpace(obj, 0) + 1 // past "{"
	for {
		i = jsonscan.SkipSpace(obj, i)
		if obj[i] == '}' {
			return nil
		}
		end := jsonscan.StringEnd(obj, i)
		name := obj[i:end]
		i = jsonscan.SkipSpace(obj, jsonscan.SkipSpace(obj, end)+1) // past ":"
		end = jsonscan.ValueEnd(obj, i)
		if err := fn(name, obj[i:end]); err != nil {
			return err
		}
		if i = jsonscan.SkipSpace(obj, end); obj[i] == ',' {
			i++
		}
	}
}

// eachElement calls fn with each element of arr, a valid JSON array, and
// where it starts in arr, in their order, until fn returns an error.
func eachElement(arr []byte, fn func(start int, value []byte) error) error {
	at := jsonscan.SkipSpace(arr, 0) + 1 // past "["
	for {
		at = jsonscan.SkipSpace(arr, at)
		if arr[at] == ']' {
			return nil
		}
		end := jsonscan.ValueEnd(arr, at)
		if err := fn(at, arr[at:end]); err != nil {
			return err
		}
		if at = jsonscan.SkipSpace(arr, end); arr[at] == ',' {
			at++
		}
	}
}

// plainString returns the text of quoted, a JSON string, when it needs
// no decoding: no escape, valid UTF-8 (encoding/json puts U+FFFD for
// a bad byte).
func plainString(quoted []byte) ([]byte, bool) {
	if len(quoted) < 2 || quoted[0] != '"' {
		return nil, false
	}
	s := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return nil, false
	}
	return s, true
}

// memberName is the name quoted, a JSON string, as encoding/json reads it.
func memberName(quoted []byte) string {
	if s, ok := plainString(quoted); ok {
		return string(s)
	}
	var name string
	_ = json.Unmarshal(quoted, &name) // valid JSON
	return name
}

// plainValue decodes raw into v, a *string, *[]string, *int, *bool or
// the file's seconds, when raw is plainly one: true when it did, as
// encoding/json (and seconds.decodeFile) would have.
func plainValue(raw []byte, v any) bool {
	switch v := v.(type) {
	case *string:
		s, ok := plainString(raw)
		if ok {
			*v = string(s)
		}
		return ok
	case *int:
		n, ok := plainInt(raw)
		if ok {
			*v = n
		}
		return ok
	case seconds:
		n, ok := plainInt(raw)
		if ok {
			*v.d = durationOf(int64(n), time.Second)
		}
		return ok
	case *bool:
		switch string(raw) {
		case "true", "false":
			*v = raw[0] == 't'
			return true
		}
	case *[]string:
		if len(raw) == 0 || raw[0] != '[' {
			return false
		}
		n := 0
		_ = eachElement(raw, func(int, []byte) error { n++; return nil })
		out := make([]string, 0, n)
		ok := true
		_ = eachElement(raw, func(_ int, e []byte) error {
			s, plain := plainString(e)
			if ok = ok && plain; ok {
				out = append(out, string(s))
			}
			return nil
		})
		if ok {
			*v = out
		}
		return ok
	}
	return false
}

// plainInt is raw as an int, when it is plainly one: no fraction, no
// exponent, within an int's range.
func plainInt(raw []byte) (int, bool) {
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false
	}
	n, err := strconv.Atoi(string(raw)) // refuses a fraction or an exponent
	return n, err == nil
}
