package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// maxErrorBody bounds what is read ahead of a 401 (or a DPoP 400) body to
// look for its OAuth error code; the caller still reads the whole body.
const maxErrorBody = 64 << 10

// rejected reports whether resp is a 401 invalid_token. It reads ahead of
// the body, so the caller can still read all of it.
func rejected(resp *http.Response) bool {
	if resp.StatusCode != http.StatusUnauthorized {
		return false
	}
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if strings.Contains(v, `error="invalid_token"`) {
			return true
		}
	}
	return bodyError(peekBody(resp)).Code == "invalid_token"
}

// peekBody returns up to maxErrorBody bytes from the start of resp's body
// and leaves the body whole for the caller: the bytes read ahead, then the
// rest of the original body, then the original body's own error, if
// reading ahead met one. Peeking twice reads nothing more.
func peekBody(resp *http.Response) []byte {
	if b, ok := resp.Body.(*peekedBody); ok {
		return b.head
	}
	b := &peekedBody{orig: resp.Body}
	var err error
	b.head, err = io.ReadAll(io.LimitReader(b.orig, maxErrorBody))
	switch {
	case err != nil:
		b.rest = errReader{err}
	case len(b.head) < maxErrorBody:
		// The whole body is read: let its connection go now.
		b.orig.Close()
		b.rest = errReader{io.EOF}
	default:
		b.rest = b.orig
	}
	b.Reader = io.MultiReader(bytes.NewReader(b.head), b.rest)
	resp.Body = b
	return b.head
}

// errBodyCut is what reading a body handed back inside an error gives
// after its first maxErrorBody bytes: its connection is closed.
var errBodyCut = errors.New("client: the rest of the service's answer was not read: it was longer than 64 KiB and came with an error")

// detachBody makes resp's body independent of its connection, for a
// response handed back inside an error, which callers need not close:
// the bytes read ahead stay readable, and a body longer than those gives
// errBodyCut after them.
func detachBody(resp *http.Response) {
	peekBody(resp)
	b := resp.Body.(*peekedBody)
	if b.rest == b.orig {
		b.orig.Close()
		b.rest = errReader{errBodyCut}
		b.Reader = io.MultiReader(bytes.NewReader(b.head), b.rest)
	}
}

// peekedBody is a response body whose first bytes were read ahead: Read
// gives them, then rest.
type peekedBody struct {
	io.Reader
	head []byte
	rest io.Reader // the original body, or an error once it is used up or closed
	orig io.ReadCloser
}

func (b *peekedBody) Close() error { return b.orig.Close() }

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func bodyError(b []byte) oauthError {
	var e oauthError
	_ = json.Unmarshal(b, &e)
	return e
}

func tokenErrorDescription(resp *http.Response) string {
	return bodyError(peekBody(resp)).Description
}
