package oauthwire

import (
	"encoding/json"
	"testing"
)

// oddStrings are strings whose JSON needs escaping of every kind.
var oddStrings = []string{
	"", "plain", `quote " and backslash \`, "<script>&amp;</script>",
	"tab\tnewline\nreturn\rbackspace\bformfeed\f", "\x00\x01\x1f\x7f",
	"é ü 漢字 🔑", "line\u2028para\u2029sep", "bad utf-8 \xff\xfe \xc3", "\xe2\x80",
	"https://api.example.com/r?a=1&b=<2>",
}

func TestAppendStringIsJSONMarshal(t *testing.T) {
	for _, s := range oddStrings {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, json.Marshal = %s", s, got[1:], want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, json.Marshal = %s", s, got, want)
		}
	})
}
