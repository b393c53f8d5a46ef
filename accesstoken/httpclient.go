package accesstoken

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// maxDocument bounds what is read of a discovery document or a JWKS.
const maxDocument = 1 << 20

// limitedClient returns a client like c (or a zero one) whose exchanges
// end after timeout, or sooner by c's own Timeout, and whose answers are
// cut off with an error past maxDocument bytes. The deadline is set here,
// on the one client every fetch uses, so that none of them depends on the
// caller's client having a Timeout: &http.Client{Transport: t} has none.
func limitedClient(c *http.Client, timeout time.Duration) *http.Client {
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
	out.Transport = limitTransport{base: base, max: maxDocument}
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

// errAnswerTooLarge is what a body past the limit reads as.
var errAnswerTooLarge = errors.New("answer larger than 1 MiB")

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errAnswerTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
