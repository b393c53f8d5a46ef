package issuer

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzScanAgreesWithEncodingJSON: on any valid JSON, the walk of
// jsonscan.go finds the members and elements encoding/json finds, and a
// value it decodes plainly is the value encoding/json decodes.
func FuzzScanAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"clientId":"a","scopes":["x","y"],"requireDPoP":true,"n":1.5e3}`,
		` { "a" : { "b" : [ 1 , "}" , "\"]" ] } , "c" : null } `,
		`["a\u00e9", "\ud800", "é", "", null, true]`,
		`{"Scopes":["\u0041"],"x":[[],{}],"y":-0}`,
		`"a\\b"`, `false`, `[]`, `{}`, "[\"\xff\"]", `-0`, `12e3`, `99999999999999999999`, `-1`, `1.0`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		raw, err := oneValue(data)
		if err != nil || !bytes.Equal(raw, bytes.TrimSpace(data)) {
			t.Fatalf("oneValue(%q) = %q, %v", data, raw, err)
		}
		switch raw[0] {
		case '{':
			var got, want []string
			_ = eachMember(raw, func(quoted, v []byte) error {
				got = append(got, memberName(quoted), compact(t, v))
				return nil
			})
			dec := json.NewDecoder(bytes.NewReader(raw))
			_, _ = dec.Token()
			for dec.More() {
				name, _ := dec.Token()
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					t.Fatal(err)
				}
				want = append(want, name.(string), compact(t, v))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("members of %q: %q, encoding/json finds %q", raw, got, want)
			}
		case '[':
			var got, want []string
			_ = eachElement(raw, func(_ int, v []byte) error {
				got = append(got, compact(t, v))
				return nil
			})
			var elems []json.RawMessage
			if err := json.Unmarshal(raw, &elems); err != nil {
				t.Fatal(err)
			}
			for _, e := range elems {
				want = append(want, compact(t, e))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("elements of %q: %q, encoding/json finds %q", raw, got, want)
			}
		}
		for _, v := range []any{new(string), new([]string), new(int), new(bool)} {
			if !plainValue(raw, v) {
				continue
			}
			want := reflect.New(reflect.TypeOf(v).Elem()).Interface()
			if err := json.Unmarshal(raw, want); err != nil || !reflect.DeepEqual(v, want) {
				t.Fatalf("%q decoded plainly into %T: %#v; encoding/json: %#v, %v", raw, v, v, want, err)
			}
		}
	})
}

// compact is v without white space, as encoding/json writes it.
func compact(t *testing.T, v []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatalf("%q: %v", v, err)
	}
	return b.String()
}
