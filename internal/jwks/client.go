// Package jwks holds the rules by which a JSON Web Key Set ([RFC 7517])
// is fetched and read, for every key set this module fetches: a
// validator's (package accesstoken) and the issuer's (a trusted issuer's
// keys, a client's jwksUri). One client, bounded in time and size
// (Client); one reading (Parse, Fetch); one index of a set's keys for a
// token's kid and alg (Index); one discovery (Discover); and a set
// fetched on demand that never holds its caller past a bound (Remote).
//
// [RFC 7517]: https://www.rfc-editor.org/rfc/rfc7517
package jwks

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// MaxDocument bounds what is read of a discovery document or a JWKS.
const MaxDocument = 1 << 20

// Client returns a client like c (or a zero one) whose exchanges end
// after timeout, or sooner by c's own Timeout, and whose answers are cut
// off with ErrTooLarge past maxBytes (MaxDocument when zero). The
// deadline is set here, on the one client every fetch uses, so that none
// of them depends on the caller's client having a Timeout:
// &http.Client{Transport: t} has none.
func Client(c *http.Client, timeout time.Duration, maxBytes int64) *http.Client {
	out := &http.Client{}
	if c != nil {
		cp := *c
		out = &cp
	}
	if out.Timeout <= 0 || out.Timeout > timeout {
		out.Timeout = timeout
	}
	base := out.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if maxBytes <= 0 {
		maxBytes = MaxDocument
	}
	out.Transport = limitTransport{base: base, max: maxBytes}
	return out
}

type limitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max}
	return resp, nil
}

// ErrTooLarge is what a body past the limit reads as.
var ErrTooLarge = errors.New("answer larger than its bound")

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
