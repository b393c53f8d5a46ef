package scope_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/scope"
)

func FuzzParseClaim(f *testing.F) {
	for _, s := range []string{`"pd_AdminWebApi pd_ConnectWebApi"`, `["a","b"]`, `42`, `null`, `{"a":1}`, `["a b"]`, `"\u0000"`, `[`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := scope.ParseClaim(json.RawMessage(raw))
		if err != nil {
			if s != nil {
				t.Fatal("a set with an error")
			}
			return
		}
		if !slices.IsSorted(s) || len(slices.Compact(slices.Clone(s))) != len(s) {
			t.Fatalf("set %q not sorted and unique", s)
		}
		for _, v := range s {
			if v == "" || strings.ContainsAny(v, " \t\r\n") {
				t.Fatalf("bad element %q", v)
			}
			if !s.Has(v) {
				t.Fatalf("Has(%q) false", v)
			}
		}
	})
}
