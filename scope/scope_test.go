package scope_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/idsauth/idsauth/scope"
)

func TestParseClaim(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want []string
		err  error
	}{
		{"space-delimited string", `"pd_AdminWebApi pd_ConnectWebApi"`, []string{"pd_AdminWebApi", "pd_ConnectWebApi"}, nil},
		{"array of strings", `["pd_ConnectWebApi","pd_AdminWebApi"]`, []string{"pd_AdminWebApi", "pd_ConnectWebApi"}, nil},
		{"duplicates and extra spaces", `"  a  b a "`, []string{"a", "b"}, nil},
		{"absent", ``, nil, nil},
		{"null", `null`, nil, nil},
		{"empty string", `""`, []string{}, nil},
		{"number", `42`, nil, scope.ErrInvalidClaim},
		{"object", `{"a":1}`, nil, scope.ErrInvalidClaim},
		{"array with a number", `["a",1]`, nil, scope.ErrInvalidClaim},
		{"array element with a space", `["a b"]`, nil, scope.ErrInvalidClaim},
		{"array element with a space is a bad name", `["a b"]`, nil, scope.ErrInvalidName},
		// RFC 6749 §3.3: scope names are separated by U+0020 and hold no
		// other whitespace.
		{"array element with a non-breaking space", `["pd_ConnectWebApi\u00a0pd_AdminWebApi"]`, nil, scope.ErrInvalidName},
		{"invalid UTF-8 in a name", "\"a\xffb\"", nil, scope.ErrInvalidName},
		{"non-breaking space inside a name is refused", `"pd_ConnectWebApi\u00a0pd_AdminWebApi"`, nil, scope.ErrInvalidName},
		{"tab inside a name is refused", `"pd_ConnectWebApi\tpd_AdminWebApi"`, nil, scope.ErrInvalidName},
		{"line feed inside a name is refused", `"pd_ConnectWebApi\npd_AdminWebApi"`, nil, scope.ErrInvalidName},
		{"ideographic space inside a name is refused", `"pd_ConnectWebApi\u3000pd_AdminWebApi"`, nil, scope.ErrInvalidName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := scope.ParseClaim(json.RawMessage(c.raw))
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if len(got) != len(c.want) || (len(got) > 0 && !slices.Equal([]string(got), c.want)) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestParseGrantsNothingAcrossOtherWhitespace: Parse splits on U+0020
// alone, so no other separator can make a second, granted, name.
func TestParseGrantsNothingAcrossOtherWhitespace(t *testing.T) {
	for _, sep := range []string{"\u00a0", "\t", "\n", "\r", "\v", "\f", "\u2003", "\u3000", "\u0085", "\u2028"} {
		s := scope.Parse(scope.ConnectWebAPI + sep + scope.AdminWebAPI)
		if s.HasAny(scope.AdminWebAPI, scope.ConnectWebAPI) || len(s) != 1 {
			t.Errorf("separator %q: %q grants a known scope", sep, s)
		}
	}
}

func TestSet(t *testing.T) {
	s := scope.Parse("pd_ConnectWebApi pd_AdminWebApi")
	if !s.Has(scope.AdminWebAPI) || !s.Has(scope.ConnectWebAPI) || s.Has("pd_Other") {
		t.Errorf("Has wrong on %v", s)
	}
	if !s.HasAny("x", scope.ConnectWebAPI) || s.HasAny("x", "y") || s.HasAny() {
		t.Errorf("HasAny wrong on %v", s)
	}
	if s.String() != "pd_AdminWebApi pd_ConnectWebApi" {
		t.Errorf("String = %q", s.String())
	}
	var empty scope.Set
	if empty.Has("") || empty.HasAny(scope.AdminWebAPI) {
		t.Error("empty set holds something")
	}
}

func TestFamilies(t *testing.T) {
	want := map[scope.Family]string{scope.Admin: scope.AdminWebAPI, scope.Connect: scope.ConnectWebAPI, scope.ConnectSession: scope.ConnectWebAPI}
	for f, s := range want {
		if got, ok := f.Required(); !ok || got != s {
			t.Errorf("%v requires %q, want %q", f, got, s)
		}
		if !slices.Contains(scope.Grants(s), f) {
			t.Errorf("%q does not grant %v", s, f)
		}
	}
	if _, ok := scope.SCIM.Required(); ok {
		t.Error("SCIM must need no identity-service scope")
	}
	if slices.Contains(scope.Grants(scope.AdminWebAPI), scope.Connect) || slices.Contains(scope.Grants(scope.ConnectWebAPI), scope.Admin) {
		t.Error("a scope grants the other's API")
	}
	if scope.Grants("pd_Unknown") != nil || scope.Known("pd_Unknown") || !scope.Known(scope.AdminWebAPI) {
		t.Error("unknown scope handled wrong")
	}
}

func ExampleParseClaim() {
	s, _ := scope.ParseClaim(json.RawMessage(`["pd_ConnectWebApi"]`))
	fmt.Println(s.Has(scope.ConnectWebAPI), scope.Grants(scope.ConnectWebAPI))
	// Output: true [Connect API Connect Session API]
}
