package client

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/origin"
)

// dpopProver makes the DPoP proofs of a client (RFC 9449): one for each
// token request and each call, by Config.DPoPKey, with the nonce each
// origin last gave (kept per origin, as RFC 9449 §8 and §9 have it).
type dpopProver struct {
	signer *clientauth.Signer
	now    func() time.Time

	mu     sync.Mutex
	nonces map[string]string // by origin
}

// proof returns a proof for a request with method to u, for token (""
// at the token endpoint), with the origin's nonce.
func (d *dpopProver) proof(method string, u *url.URL, token string) (string, error) {
	htu := *u
	htu.RawQuery, htu.ForceQuery, htu.Fragment, htu.RawFragment, htu.User = "", false, "", "", nil
	d.mu.Lock()
	nonce := d.nonces[origin.Of(u)]
	d.mu.Unlock()
	return d.signer.Proof(method, htu.String(), token, nonce, d.now())
}

// note keeps the nonce an answer from u's origin gives, and reports
// whether it asks for a retry with it: use_dpop_nonce, as a token
// endpoint (400, in the JSON body) or a resource server (401, in the DPoP
// challenge) says it.
func (d *dpopProver) note(u *url.URL, resp *http.Response) (retry bool) {
	nonce := resp.Header.Get("DPoP-Nonce")
	if nonce == "" {
		return false
	}
	d.mu.Lock()
	d.nonces[origin.Of(u)] = nonce
	d.mu.Unlock()
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		for _, v := range resp.Header.Values("WWW-Authenticate") {
			if len(v) > 5 && strings.EqualFold(v[:5], "DPoP ") && strings.Contains(v, `error="use_dpop_nonce"`) {
				return true
			}
		}
	case http.StatusBadRequest:
		return bodyError(peekBody(resp)).Code == "use_dpop_nonce"
	}
	return false
}

// sendWithProof sends req through base with a proof made by mk, and once
// more with a new proof when the answer asks for a nonce and the body can
// be sent again.
func (d *dpopProver) sendWithProof(base http.RoundTripper, req *http.Request, mk func(*http.Request) error) (*http.Response, error) {
	if err := mk(req); err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := base.RoundTrip(req)
	if err != nil || !d.note(req.URL, resp) {
		return resp, err
	}
	if !canReplay(req) {
		return resp, nil // the answer as it is
	}
	again := req.Clone(req.Context())
	if again.Body, err = bodyAgain(req); err != nil {
		resp.Body.Close()
		return nil, err
	}
	if err := mk(again); err != nil {
		closeBody(again)
		resp.Body.Close()
		return nil, err
	}
	resp.Body.Close()
	return base.RoundTrip(again)
}

// tokenTransport adds a proof to each token request.
type tokenTransport struct {
	base http.RoundTripper
	d    *dpopProver
}

func (t tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if req.Body != nil && req.GetBody == nil {
		// x/oauth2 gives a strings.Reader body with GetBody; make sure of
		// it, so that a nonce retry can send the form again.
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	return t.d.sendWithProof(t.base, req, func(r *http.Request) error {
		p, err := t.d.proof(r.Method, r.URL, "")
		if err == nil {
			r.Header.Set("DPoP", p)
		}
		return err
	})
}
