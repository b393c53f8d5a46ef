package jws_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/jws"
)

// TestReadClaimsRules: the reader's rules, the same for every caller:
// exact names after unescaping, a duplicate name refuses the whole set,
// null is absent, NumericDates within years 1 to 9999.
func TestReadClaimsRules(t *testing.T) {
	t.Run("not an object", func(t *testing.T) {
		for _, p := range []string{``, `null`, `[]`, `"x"`, `1`, `{`, `{"a":1}x`, `{"a":1,}`} {
			if _, err := jws.ReadClaims([]byte(p)); !errors.Is(err, jws.ErrMalformed) {
				t.Errorf("%q: %v, want ErrMalformed", p, err)
			}
		}
	})
	t.Run("duplicate names, however spelled", func(t *testing.T) {
		for _, p := range []string{
			`{"exp":1,"exp":2}`,
			`{"exp":1,"\u0065xp":2}`,
			`{"iss":"a","sub":"b","iss":null}`,
		} {
			if _, err := jws.ReadClaims([]byte(p)); !errors.Is(err, jws.ErrMalformed) {
				t.Errorf("%s: %v, want ErrMalformed", p, err)
			}
		}
		// Past the pair-by-pair check's size, the map finds them too.
		big := []byte(`{`)
		for i := range 40 {
			big = append(big, `"c`...)
			big = append(big, byte('a'+i%26), byte('a'+i/26))
			big = append(big, `":1,`...)
		}
		if _, err := jws.ReadClaims(append(append([]byte{}, big...), `"x":1}`...)); err != nil {
			t.Fatalf("40 names: %v", err)
		}
		if _, err := jws.ReadClaims(append(big, `"caa":2}`...)); !errors.Is(err, jws.ErrMalformed) {
			t.Fatalf("41 names, one twice: %v", err)
		}
	})
	c, err := jws.ReadClaims([]byte(` { "iss" : "https://h/ids", "EXP": 1, "\u0065xp": 1800000000.5, "aud": ["a","b"],
		"sub": null, "nested": {"iss": "not me", "x": [1, {"y": "}"}]}, "s\"q": "v\\w", "uni": "h\u00e9" } `))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("exact names", func(t *testing.T) {
		if iss, ok, err := c.String("iss"); iss != "https://h/ids" || !ok || err != nil {
			t.Fatalf("iss %q %v %v", iss, ok, err)
		}
		exp, ok, err := c.Time("exp")
		if !ok || err != nil || !exp.Equal(time.Unix(1800000000, 5e8)) {
			t.Fatalf("exp %v %v %v: the escaped name is exp, EXP is another claim", exp, ok, err)
		}
		if s, _, _ := c.String(`s"q`); s != `v\w` {
			t.Fatalf("an escaped name and value: %q", s)
		}
		if s, _, _ := c.String("uni"); s != "hé" {
			t.Fatalf("a non-ASCII value: %q", s)
		}
	})
	t.Run("null is absent", func(t *testing.T) {
		if c.Has("sub") {
			t.Fatal("sub: null is present")
		}
		if _, ok, err := c.String("sub"); ok || err != nil {
			t.Fatalf("sub: %v %v", ok, err)
		}
		n := 0
		_ = c.Each(func(name string, _ json.RawMessage) error {
			if name == "sub" {
				t.Fatal("Each gave the null sub")
			}
			n++
			return nil
		})
		if n != 7 {
			t.Fatalf("Each gave %d members, want 7", n)
		}
	})
	t.Run("a nested object's members are not the set's", func(t *testing.T) {
		if iss, _, _ := c.String("iss"); iss != "https://h/ids" {
			t.Fatalf("iss %q", iss)
		}
		if c.Has("x") || c.Has("y") {
			t.Fatal("a nested member read as a claim")
		}
	})
	t.Run("string or strings", func(t *testing.T) {
		if aud, ok, err := c.Strings("aud"); !ok || err != nil || len(aud) != 2 || aud[1] != "b" {
			t.Fatalf("aud %q %v %v", aud, ok, err)
		}
		if one, _, err := c.Strings("iss"); err != nil || len(one) != 1 {
			t.Fatalf("one string %q %v", one, err)
		}
		if _, _, err := c.Strings("exp"); !errors.Is(err, jws.ErrMalformed) {
			t.Fatalf("a number as strings: %v", err)
		}
	})
	t.Run("types", func(t *testing.T) {
		if _, _, err := c.String("exp"); !errors.Is(err, jws.ErrMalformed) {
			t.Fatalf("a number as a string: %v", err)
		}
		if _, _, err := c.Time("iss"); !errors.Is(err, jws.ErrMalformed) {
			t.Fatalf("a string as a time: %v", err)
		}
	})
	t.Run("NumericDate range", func(t *testing.T) {
		for _, v := range []string{`1e19`, `1e300`, `-62135596801`, `253402300800`, `"1"`, `true`} {
			if _, err := jws.NumericDate(json.RawMessage(v)); !errors.Is(err, jws.ErrMalformed) {
				t.Errorf("%s: %v", v, err)
			}
		}
		for _, v := range []string{`-62135596800`, `253402300799`, `0`, `1.5e9`} {
			if _, err := jws.NumericDate(json.RawMessage(v)); err != nil {
				t.Errorf("%s: %v", v, err)
			}
		}
	})
}

// FuzzReadClaims: on any input, the reader agrees with encoding/json on
// which member names an object has and what each holds, and refuses
// exactly what encoding/json refuses or what names a member twice.
func FuzzReadClaims(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":"}"},"c":[1,"]"]}`, `{"a":null}`, `{"\u0061":1,"a":2}`, `{"A":1,"a":2}`, `[]`, `{"a":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := jws.ReadClaims(payload)
		var want map[string]json.RawMessage
		jerr := json.Unmarshal(payload, &want)
		if jerr != nil || want == nil {
			if err == nil {
				t.Fatalf("%q: read, but encoding/json refuses it (%v)", payload, jerr)
			}
			return
		}
		var names []string
		dec := json.NewDecoder(bytesReader(payload))
		_, _ = dec.Token()
		for dec.More() {
			tok, _ := dec.Token()
			names = append(names, tok.(string))
			var skip json.RawMessage
			_ = dec.Decode(&skip)
		}
		if len(names) != len(want) {
			if err == nil {
				t.Fatalf("%q names a member twice, and was read", payload)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v, but it is an object without duplicates", payload, err)
		}
		got := map[string]json.RawMessage{}
		_ = c.Each(func(name string, v json.RawMessage) error { got[name] = v; return nil })
		for name, v := range want {
			if string(v) == "null" {
				delete(want, name)
			}
		}
		if !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Fatalf("%q: read %q, encoding/json %q", payload, got, want)
		}
	})
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
