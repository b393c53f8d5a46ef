package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/scope"
)

// TestErrorBodiesReachTheCallerWhole: the client reads ahead of a 401 and
// of a DPoP 400 to find their error codes; the caller still gets every
// byte of the body, and a body that breaks off gives an error from Read,
// not a silent end.
func TestErrorBodiesReachTheCallerWhole(t *testing.T) {
	w := newWorld(t, 0, nil)
	long := strings.Repeat("0123456789abcdef", 20<<10) // 320 KiB, past the client's 64 KiB look-ahead
	cases := []struct {
		name      string
		status    int
		header    [2]string
		body      string
		breakOff  bool // the server promises more than it sends
		wantError bool
	}{
		{"401 without invalid_token, long body", 401, [2]string{"WWW-Authenticate", `Bearer realm="x"`}, long, false, false},
		{"401 with a long JSON body", 401, [2]string{}, `{"error":"invalid_request","pad":"` + long + `"}`, false, false},
		{"400 with a DPoP nonce, long body", 400, [2]string{"DPoP-Nonce", "n-1"}, long, false, false},
		{"401 that breaks off inside the look-ahead", 401, [2]string{"WWW-Authenticate", `Bearer realm="x"`}, long[:1000], true, true},
		{"401 that breaks off after the look-ahead", 401, [2]string{"WWW-Authenticate", `Bearer realm="x"`}, long, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if tc.header[0] != "" {
					rw.Header().Set(tc.header[0], tc.header[1])
				}
				n := len(tc.body)
				if tc.breakOff {
					n += 100
				}
				rw.Header().Set("Content-Length", strconv.Itoa(n))
				rw.WriteHeader(tc.status)
				io.WriteString(rw, tc.body)
			}))
			defer srv.Close()
			cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", BaseURL: w.ids.URL, Origins: []string{srv.URL},
				Scopes: []string{scope.AdminWebAPI}}
			if tc.status == 400 {
				cfg.DPoPKey = dpopKey(t)
				cfg.TokenURL = w.ids.URL + "/ids/connect/token"
			}
			// A body that cannot be sent again: the client hands back the
			// first answer as it is.
			req, _ := http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(strings.NewReader("x")))
			resp, err := cfg.Client(context.Background()).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if !bytes.Equal(got, []byte(tc.body)) {
				t.Fatalf("read %d bytes of %d", len(got), len(tc.body))
			}
			if tc.wantError != (err != nil) {
				t.Fatalf("Read's error: %v, want one: %v", err, tc.wantError)
			}
		})
	}
}

// TestInvalidTokenErrorBodyNeedsNoClose: a token rejected twice comes back
// as *InvalidTokenError, whose Response callers may ignore: its body no
// longer holds the connection, and a body longer than the look-ahead says
// so with an error instead of ending early.
func TestInvalidTokenErrorBodyNeedsNoClose(t *testing.T) {
	w := newWorld(t, 0, nil)
	long := strings.Repeat("x", 100<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		rw.WriteHeader(401)
		io.WriteString(rw, long)
	}))
	defer srv.Close()
	c := w.client(func(cfg *client.Config) { cfg.Origins = []string{srv.URL} })
	_, err := c.Get(srv.URL)
	var ite *client.InvalidTokenError
	if !errors.As(err, &ite) {
		t.Fatalf("got %v, want *InvalidTokenError", err)
	}
	got, rerr := io.ReadAll(ite.Response.Body)
	if len(got) != 64<<10 || got[0] != 'x' || rerr == nil {
		t.Fatalf("read %d bytes and %v, want the first 64 KiB and an error", len(got), rerr)
	}
}
