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

	"github.com/MicahParks/jwkset"
)

// Rules say how a JWKS is read. The zero value reads a plain JWKS as
// jwkset does: every key of a type this module reads, the others left
// out.
type Rules struct {
	// SigUse, when set, keeps only the JWKs whose "use" it is, such as
	// "jwt-svid" in a SPIFFE bundle (whose "x509-svid" keys are a CA's,
	// not a signer's). Empty keeps every JWK.
	SigUse jwkset.USE
	// MaxKeys refuses a set of more JWKs (before SigUse leaves any out):
	// a set that large is hostile, or a mistake. Zero means no bound but
	// the size of the answer.
	MaxKeys int
}

// ErrTooManyKeys is the error of a set with more JWKs than Rules.MaxKeys.
var ErrTooManyKeys = errors.New("the JWKS holds more keys than its bound")

// Parse reads data, the JSON of a JWKS ({"keys": [...]}), by r.
func Parse(data []byte, r Rules) ([]jwkset.JWK, error) {
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	return r.read(set)
}

func (r Rules) read(set jwkset.JWKSMarshal) ([]jwkset.JWK, error) {
	if r.MaxKeys > 0 && len(set.Keys) > r.MaxKeys {
		return nil, fmt.Errorf("%w (%d)", ErrTooManyKeys, r.MaxKeys)
	}
	out := make([]jwkset.JWK, 0, len(set.Keys))
	for _, m := range set.Keys {
		if r.SigUse != "" && m.USE != r.SigUse {
			continue
		}
		// A SPIFFE bundle's use is none of RFC 7517's: checked above.
		j, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{SkipUse: r.SigUse != ""})
		switch {
		case errors.Is(err, jwkset.ErrUnsupportedKey):
			continue
		case err != nil:
			return nil, fmt.Errorf("a JWK of the set: %w", err)
		}
		out = append(out, j)
	}
	return out, nil
}

// Fetch GETs the JWKS at u with c (a Client), header added to the
// request (nil: none), and reads it by r. An answer other than 200 is an
// error that wraps jwkset.ErrInvalidHTTPStatusCode.
func Fetch(ctx context.Context, c *http.Client, u string, header http.Header, r Rules) ([]jwkset.JWK, error) {
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
		return nil, fmt.Errorf("%w: %d", jwkset.ErrInvalidHTTPStatusCode, resp.StatusCode)
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
	case errors.Is(err, jwkset.ErrInvalidHTTPStatusCode):
		return "http_status"
	}
	return "invalid"
}
