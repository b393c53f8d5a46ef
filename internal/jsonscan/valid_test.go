package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are JSON texts at the edges of the grammar, each checked
// against encoding/json.Valid, and the fuzzer's seeds.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `{"a":1}`, `{"a" : [1, 2.5e-3, -0, true, false, null, "x"]}`,
	`{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":1}}`, `[[]`, `]`, `}`,
	`"`, `"\"`, `"\\"`, `"\u00e9\uD834\uDD1E"`, `"\u00g0"`, `"\u12"`, `"\x"`, `"\/\b\f\n\r\t"`, "\"a\tb\"", "\"\x7f\"", "\"\xff\xfe\"",
	`0`, `-0`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `1E-7`, `1.5E+07`, `-01`, `+1`, `1.e3`, `00`, `2x`, `Infinity`, `NaN`,
	`true`, `tru`, `truex`, `nul`, `null `, ` false`, `falsey`, `True`,
	`{"a":{"b":{"c":[{"d":null}]}}}`, `[1] [2]`, `{} x`, "{}\x00", "\ufeff{}", `{"a":1}` + "\n",
}

func TestValidIsEncodingJSONs(t *testing.T) {
	cases := append([]string(nil), validCases...)
	for _, d := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		cases = append(cases, strings.Repeat("[", d)+strings.Repeat("]", d), strings.Repeat(`{"a":`, d)+"1"+strings.Repeat("}", d))
	}
	for _, c := range cases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%.60q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// document is a registry's list of clients of the stated shape, as a load
// decodes it.
func document(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"clients":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"scopes": ["pd_AdminWebApi", "pd_ConnectWebApi", "reports.read"], "accessTokenLifetime": 600, "claims": [{"type": "t\u00e9", "value": -1.5e3}]}`)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func BenchmarkValid(b *testing.B) {
	doc := document(1000)
	b.Run("jsonscan", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for range b.N {
			if !Valid(doc) {
				b.Fatal("not valid")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for range b.N {
			if !json.Valid(doc) {
				b.Fatal("not valid")
			}
		}
	})
}
