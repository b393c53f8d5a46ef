package origin

import (
	"net/url"
	"testing"
)

func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://API.example.com":          "https://api.example.com:443",
		"https://api.example.com:443/path": "https://api.example.com:443",
		"HTTP://api.example.com":           "http://api.example.com:80",
		"http://api.example.com:443":       "http://api.example.com:443",
		"https://[::1]:8443":               "https://[::1]:8443",
		"http://127.0.0.1:8080/x?y":        "http://127.0.0.1:8080",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := Of(u); got != want {
			t.Errorf("Of(%q) = %q, want %q", in, got, want)
		}
	}
}
