package jwks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Rules say how a JWKS is read. The zero value reads every JWK.
type Rules struct {
	// SigUse, when set, keeps only the JWKs whose "use" it is, such as
	// "jwt-svid" in a SPIFFE bundle (whose "x509-svid" keys are a CA's,
	// not a signer's). Empty keeps every JWK.
	SigUse string
	// MaxKeys refuses a set of more JWKs (before SigUse leaves any out):
	// a set that large is hostile, or a mistake. Zero means no bound but
	// the size of the answer.
	MaxKeys int
}

// ErrTooManyKeys is the error of a set with more JWKs than Rules.MaxKeys.
var ErrTooManyKeys = errors.New("the JWKS holds more keys than its bound")

// ErrStatus is the error of an answer other than 200.
var ErrStatus = errors.New("the key source answered with another status than 200")

// StatusError is an answer other than 200, with its status: it is
// ErrStatus to errors.Is.
type StatusError struct {
	Code int // the answer's HTTP status
}

func (e *StatusError) Error() string        { return fmt.Sprintf("%v: %d", ErrStatus, e.Code) }
func (e *StatusError) Is(target error) bool { return target == ErrStatus }

// Parse reads data, the JSON of a JWKS ({"keys": [...]}), by r: each
// JWK's members, and its public key when it is of a type this module
// reads (Key.Pub).
func Parse(data []byte, r Rules) ([]Key, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	if set.Keys == nil {
		return nil, errors.New("not a JWKS: no keys member")
	}
	if r.MaxKeys > 0 && len(set.Keys) > r.MaxKeys {
		return nil, fmt.Errorf("%w (%d)", ErrTooManyKeys, r.MaxKeys)
	}
	out := make([]Key, 0, len(set.Keys))
	for _, raw := range set.Keys {
		k, err := readKey(raw)
		if err != nil {
			return nil, fmt.Errorf("a JWK of the set: %w", err)
		}
		if r.SigUse != "" && k.Use != r.SigUse {
			continue
		}
		out = append(out, k)
	}
	return out, nil
}

// Fetch GETs the JWKS at u with c (a Client), header added to the
// request (nil: none), and reads it by r. An answer other than 200 is an
// error that wraps ErrStatus.
func Fetch(ctx context.Context, c *http.Client, u string, header http.Header, r Rules) ([]Key, error) {
	data, err := get(ctx, c, u, header)
	if err != nil {
		return nil, err
	}
	return Parse(data, r)
}

// get GETs u with c and returns the body of a 200.
func get(ctx context.Context, c *http.Client, u string, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for name, vs := range header {
		req.Header[name] = vs
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // lets the connection be reused
		return nil, &StatusError{Code: resp.StatusCode}
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Failure classifies a failed fetch for a KeysFetchFailed event: its
// error holds a URL and a server's words, an event neither. One of
// "timeout" (the fetch ran out of time), "transport" (no answer:
// connection refused, DNS, TLS, a redirect refused), "http_status" (an
// answer other than 200) and "invalid" (a 200 whose body is no JWKS the
// reader reads).
func Failure(err error) string {
	var ue *url.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ue) && ue.Timeout():
		return "timeout"
	case ue != nil:
		return "transport"
	case errors.Is(err, ErrStatus):
		return "http_status"
	}
	return "invalid"
}
