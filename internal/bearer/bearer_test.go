package bearer

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestToken(t *testing.T) {
	cases := []struct {
		headers []string
		token   string
		err     error
	}{
		{nil, "", ErrMissing},
		{[]string{"Bearer abc.def.ghi"}, "abc.def.ghi", nil},
		{[]string{"bearer   abc"}, "abc", nil},
		{[]string{"BEARER abc"}, "abc", nil},
		{[]string{"Bearer"}, "", ErrMissing},
		{[]string{"Bearer   "}, "", ErrMissing},
		{[]string{"Bearerabc"}, "", ErrMissing},
		{[]string{"Basic dXNlcjpwYXNz"}, "", ErrMissing},
		{[]string{"Bear"}, "", ErrMissing},
		{[]string{""}, "", ErrMissing},
		{[]string{"Bearer a b"}, "", ErrSpaceInToken},
		{[]string{"Bearer a\tb"}, "", ErrSpaceInToken},
		{[]string{"Bearer a", "Bearer a"}, "", ErrMultipleHeaders},
	}
	for _, c := range cases {
		r, _ := http.NewRequest("GET", "/", nil)
		for _, h := range c.headers {
			r.Header.Add("Authorization", h)
		}
		tok, err := Token(r)
		if tok != c.token || !errors.Is(err, c.err) {
			t.Errorf("%q: got %q, %v; want %q, %v", c.headers, tok, err, c.token, c.err)
		}
	}
}

func FuzzToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  x.y.z", "Bearer", "Basic abc", "Bearer a b", "", "BEARER\x00", strings.Repeat("A", 10000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header["Authorization"] = []string{h}
		tok, err := Token(r)
		if err != nil {
			if tok != "" {
				t.Fatalf("a token with an error: %q", tok)
			}
			return
		}
		if tok == "" || strings.ContainsAny(tok, " \t") || !strings.HasSuffix(strings.TrimRight(h, " \t"), tok) {
			t.Fatalf("header %q gave token %q", h, tok)
		}
		if !strings.EqualFold(strings.TrimLeft(h, " \t")[:6], "bearer") {
			t.Fatalf("header %q is not the Bearer scheme", h)
		}
	})
}
