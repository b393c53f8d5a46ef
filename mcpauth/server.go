package mcpauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/middleware"
)

// Config says how an MCP endpoint is protected.
type Config struct {
	// Resource is the MCP endpoint's canonical URL, as its clients call
	// it, such as "https://mcp.example.com/mcp": the "resource" of its
	// protected resource metadata (RFC 9728), and, with a Validator that
	// New builds, the audience every token must name (RFC 8707; MCP
	// authorization, token audience binding). Required: an http or https
	// URL without query or fragment.
	Resource string

	// Issuer is the authorization server whose tokens the endpoint
	// takes, such as "https://login.example.com/ids": the metadata's
	// authorization_servers, and the issuer of the Validator New builds.
	// Required.
	Issuer string

	// Validator checks the tokens. Nil means an *accesstoken.Validator
	// of Issuer's JWTs (its keys found by discovery) whose audience is
	// Resource alone. One of your own (reference tokens by
	// introspection, several issuers) must be configured with Resource
	// as its audience: a token made for another API must not open this
	// one.
	Validator accesstoken.TokenValidator

	// Scopes are the scopes every call needs, any one of them. Empty
	// means any valid token, the tools' own scopes aside.
	Scopes []string

	// ToolScopes maps a tool's name to the scopes a call of it
	// ("tools/call") needs beside Scopes, any one of them: a call
	// without one is refused 403 insufficient_scope naming them, which
	// an MCP client answers with a token of those scopes (step-up). A
	// tool named nowhere needs Scopes alone. Nil means no tool needs
	// more.
	ToolScopes map[string][]string

	// ScopesSupported is the metadata's scopes_supported. Empty means
	// Scopes and every scope of ToolScopes.
	ScopesSupported []string

	// Bearer holds the rest of the middleware's settings: Realm,
	// OnReject, Logger, Observer, DPoP (DPoP-bound tokens) and
	// ForwardedCert (certificate-bound tokens behind a proxy). Its
	// ResourceMetadata and ChallengeScopes are New's: they must be
	// empty.
	Bearer middleware.BearerConfig

	// MaxBodyBytes bounds the body of a call read to find the tool it
	// calls (with ToolScopes), once its token has been accepted: a
	// larger body is refused 413. Zero means 4 MiB.
	MaxBodyBytes int64
}

// Guard protects MCP endpoints under one Config. Make one with New; it
// is safe for concurrent use.
type Guard struct {
	protect  func(http.Handler) http.Handler // RequireBearer, then RequireScope(Scopes)
	tools    map[string]func(http.Handler) http.Handler
	maxBody  int64
	metadata http.Handler
	mdPath   string // the well-known path of Resource's document
}

// New checks cfg and returns its Guard. With a nil cfg.Validator it
// builds one, which fetches Issuer's discovery document and keys before
// it returns and keeps them fresh until ctx ends. It panics where
// middleware.RequireScope does: a scope name no token can carry.
func New(ctx context.Context, cfg Config) (*Guard, error) {
	u, err := url.Parse(cfg.Resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("mcpauth.Config.Resource %q: want the MCP endpoint's http(s) URL, without query or fragment", cfg.Resource)
	}
	if cfg.Issuer == "" {
		return nil, errors.New("mcpauth.Config.Issuer is empty: name the authorization server whose tokens the endpoint takes")
	}
	if cfg.Bearer.ResourceMetadata != nil || len(cfg.Bearer.ChallengeScopes) > 0 {
		return nil, errors.New("mcpauth.Config.Bearer: ResourceMetadata and ChallengeScopes are set by New from Resource and the scopes")
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, errors.New("mcpauth.Config.MaxBodyBytes is negative")
	}
	supported := cfg.ScopesSupported
	if len(supported) == 0 {
		supported = allScopes(cfg)
	}
	v := cfg.Validator
	if v == nil {
		if v, err = accesstoken.New(ctx, accesstoken.Config{
			Issuer: cfg.Issuer, Audience: []string{cfg.Resource},
			Logger: cfg.Bearer.Logger, Observer: cfg.Bearer.Observer,
		}); err != nil {
			return nil, fmt.Errorf("mcpauth: the validator of %s: %w", cfg.Issuer, err)
		}
	}
	md := &middleware.ResourceMetadata{
		Resource:             cfg.Resource,
		AuthorizationServers: []string{cfg.Issuer},
		ScopesSupported:      supported,
	}
	if cfg.Bearer.DPoP != nil {
		md.DPoPSigningAlgValuesSupported = middleware.DPoPAlgorithms()
	}
	mdURL, err := md.URL()
	if err != nil {
		return nil, fmt.Errorf("mcpauth: %w", err)
	}
	mdHandler, err := md.Handler()
	if err != nil {
		return nil, fmt.Errorf("mcpauth: %w", err)
	}
	bc := cfg.Bearer
	bc.ResourceMetadata = md
	// The 401 names the scopes a first token should carry: the
	// endpoint's, or, when any valid token will do, every scope it knows.
	bc.ChallengeScopes = cfg.Scopes
	if len(bc.ChallengeScopes) == 0 {
		bc.ChallengeScopes = supported
	}
	g := &Guard{maxBody: cfg.MaxBodyBytes, metadata: mdHandler}
	if g.maxBody == 0 {
		g.maxBody = 4 << 20
	}
	mdu, _ := url.Parse(mdURL) // md.URL made it
	g.mdPath = mdu.EscapedPath()
	bearer := middleware.RequireBearerWithConfig(v, bc)
	g.protect = bearer
	if len(cfg.Scopes) > 0 {
		need := middleware.RequireScope(cfg.Scopes...)
		g.protect = func(next http.Handler) http.Handler { return bearer(need(next)) }
	}
	for tool, scopes := range cfg.ToolScopes {
		if g.tools == nil {
			g.tools = map[string]func(http.Handler) http.Handler{}
		}
		g.tools[tool] = middleware.RequireScope(scopes...)
	}
	return g, nil
}

// allScopes is Scopes and every scope of ToolScopes, each once, the
// tools' in the order of their names.
func allScopes(cfg Config) []string {
	out := slices.Clone(cfg.Scopes)
	tools := make([]string, 0, len(cfg.ToolScopes))
	for t := range cfg.ToolScopes {
		tools = append(tools, t)
	}
	slices.Sort(tools)
	for _, t := range tools {
		for _, s := range cfg.ToolScopes[t] {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// Handler returns next, an MCP endpoint's HTTP handler (mcp-go's
// StreamableHTTPServer, or any other), protected: every request needs a
// token the Config admits, whose claims the handler finds with
// accesstoken.ClaimsFrom(r.Context()); a call of a tool of ToolScopes
// needs one of its scopes too. A request for the endpoint's metadata
// document (the well-known path of Resource), which mcp-go would
// otherwise serve as it is configured, is answered with the Guard's,
// so that the one document is served there. For go-sdk's handler, use
// GoSDK.
func (g *Guard) Handler(next http.Handler) http.Handler {
	inner := next
	if len(g.tools) > 0 {
		inner = g.toolScopes(next)
	}
	protected := g.protect(inner)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == g.mdPath {
			g.metadata.ServeHTTP(w, r)
			return
		}
		protected.ServeHTTP(w, r)
	})
}

// Metadata returns the handler of the endpoint's protected resource
// metadata (RFC 9728), to mount at the host root:
// mux.Handle("/.well-known/oauth-protected-resource/", g.Metadata()).
// Its document's resource is the URL the client called (Resource),
// authorization_servers Issuer, scopes_supported the Config's.
func (g *Guard) Metadata() http.Handler { return g.metadata }

// MetadataPath is the path of the endpoint's metadata document on its
// host: "/.well-known/oauth-protected-resource/mcp" for
// "https://mcp.example.com/mcp".
func (g *Guard) MetadataPath() string { return g.mdPath }
