package mcpauth

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"golang.org/x/oauth2"

	"github.com/idsauth/idsauth/client"
)

// Client returns an HTTP client for an MCP client of either SDK
// (go-sdk's mcp.StreamableClientTransport.HTTPClient, mcp-go's
// transport.WithHTTPBasicClient) that gets its tokens as the MCP
// authorization specification says, with cfg's credentials: a secret
// (Basic, or in the body when the server lists only
// client_secret_post), a key (private_key_jwt, its assertion's aud the
// server's issuer), a certificate (RFC 8705, its token endpoint alias
// when the server names one), a DPoP key (RFC 9449).
//
// A call to an endpoint it has no token for goes without one; its 401
// is answered by discovery (see DiscoveryError for what may fail): the
// challenge's resource_metadata, the endpoint's protected resource
// metadata, whose resource must be the URL called, and the metadata of
// its authorization server; then a token for the endpoint as its
// resource (RFC 8707), with cfg.Scopes or else the challenge's scope or
// else the metadata's scopes_supported, and the call again, once. The
// token goes to the endpoint's origin alone. From then on the
// endpoint's calls carry it, renewed and retried on invalid_token as
// client.Config.Client does. A 403 insufficient_scope naming a scope
// the token lacks gets one token with that scope added, and one retry
// (MCP's step-up); the same refusal again is returned as it is.
//
// cfg's BaseURL, TokenURL, Resources and Origins are ignored: discovery
// sets them. cfg.Issuer, when set, is the only authorization server the
// credentials are sent to: an endpoint naming another is refused
// (DiscoveryError); empty trusts the server each endpoint names, which
// receives the credentials, so set it wherever the secret or key is
// registered with one server alone. ctx supplies values to the token
// requests, as client.Config.Client's does.
func Client(ctx context.Context, cfg client.Config) *http.Client {
	base := cfg.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	out := *base
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	// A metadata document is fetched from its URL itself: a redirect
	// could lead off https or loopback.
	discovery := *base
	discovery.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	out.Transport = &transport{ctx: ctx, cfg: cfg, base: rt, discovery: &discovery, endpoints: map[string]*endpoint{}}
	return &out
}

// maxEndpoints bounds the endpoints a Client remembers: a program talks
// to a few; past this many, all are forgotten and found again.
const maxEndpoints = 64

type transport struct {
	ctx       context.Context
	cfg       client.Config
	base      http.RoundTripper // calls to endpoints without a token
	discovery *http.Client      // metadata fetches

	mu        sync.Mutex
	endpoints map[string]*endpoint // by resource
}

// endpoint is an MCP endpoint the client has found a token for.
type endpoint struct {
	found  *discovered
	scopes []string
	calls  *http.Client // cfg.Client with the discovered settings
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resource := resourceOf(req.URL)
	t.mu.Lock()
	ep := t.endpoints[resource]
	t.mu.Unlock()
	var resp *http.Response
	var err error
	if ep == nil {
		resp, err = t.base.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusUnauthorized || !replayable(req) {
			return resp, err
		}
		challenges := resp.Header.Values("WWW-Authenticate")
		drain(resp)
		found, derr := discover(req.Context(), t.discovery, req.URL, challenges, t.cfg.Issuer)
		if derr != nil {
			return nil, derr
		}
		scopes := t.cfg.Scopes
		if len(scopes) == 0 {
			scopes = found.scopes
		}
		ep = t.remember(resource, found, scopes)
		if resp, err = ep.calls.Transport.RoundTrip(again(req)); err != nil {
			return nil, err
		}
	} else if resp, err = ep.calls.Transport.RoundTrip(req); err != nil {
		return nil, err
	}
	need := stepUp(resp, ep.scopes)
	if need == nil || !replayable(req) {
		return resp, nil
	}
	drain(resp)
	ep = t.remember(resource, ep.found, need)
	return ep.calls.Transport.RoundTrip(again(req))
}

// remember makes, and keeps, the endpoint's client for scopes.
func (t *transport) remember(resource string, found *discovered, scopes []string) *endpoint {
	cfg := t.cfg
	cfg.BaseURL, cfg.Issuer, cfg.TokenURL = "", found.as.Issuer, found.as.TokenEndpoint
	if (cfg.Certificate != nil || cfg.GetCertificate != nil) && found.as.MTLSEndpointAliases.TokenEndpoint != "" {
		cfg.TokenURL = found.as.MTLSEndpointAliases.TokenEndpoint
	}
	cfg.Resources, cfg.Origins, cfg.Scopes = []string{found.resource}, []string{found.resource}, scopes
	if cfg.AuthStyle == oauth2.AuthStyleAutoDetect && len(found.as.AuthMethods) > 0 &&
		!slices.Contains(found.as.AuthMethods, "client_secret_basic") && slices.Contains(found.as.AuthMethods, "client_secret_post") {
		cfg.AuthStyle = oauth2.AuthStyleInParams
	}
	ep := &endpoint{found: found, scopes: scopes, calls: cfg.Client(t.ctx)}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.endpoints) >= maxEndpoints {
		clear(t.endpoints)
	}
	t.endpoints[resource] = ep
	return ep
}

// stepUp returns the scopes to ask for when resp refuses a token for
// lacking a scope it names (403 insufficient_scope) that have is
// without: have and the named ones; nil otherwise.
func stepUp(resp *http.Response, have []string) []string {
	if resp.StatusCode != http.StatusForbidden {
		return nil
	}
	p := challengeParams(resp.Header.Values("WWW-Authenticate"))
	if p["error"] != "insufficient_scope" {
		return nil
	}
	need := slices.Clone(have)
	for _, s := range strings.Fields(p["scope"]) {
		if !slices.Contains(need, s) {
			need = append(need, s)
		}
	}
	if len(need) == len(have) {
		return nil // nothing to add: another token would be refused alike
	}
	return need
}

// replayable reports whether req can be sent again: no body, or one
// GetBody makes anew (the SDKs' requests have one).
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// again is req to send once more, its body made anew.
func again(req *http.Request) *http.Request {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			r.Body = b
		}
	}
	return r
}

// drain reads what is left of a refusal's body, so that its connection
// is reused, and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
