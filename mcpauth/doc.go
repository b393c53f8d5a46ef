// Package mcpauth protects an MCP server ([MCP authorization]) with
// idsauth's contract, whichever Go SDK serves it, and gives an MCP
// client its tokens: an MCP server is an OAuth 2.0 resource server, and
// an MCP client a client of its authorization server.
//
// The server side is a Guard: the token is decided by
// accesstoken.Decide through middleware.RequireBearer, as on any HTTP
// route of this module (JWTs and reference tokens, DPoP and
// certificate-bound tokens), and refused with the contract's answers as
// MCP clients read them: a 401 whose challenge names resource_metadata
// and scope, a 403 insufficient_scope naming the scope a tool needs, a
// JSON body. The endpoint's protected resource metadata (RFC 9728) has
// the endpoint's own URL as its resource, and tokens must name that URL
// in "aud" (RFC 8707), as the MCP specification asks.
//
//	guard, err := mcpauth.New(ctx, mcpauth.Config{
//		Resource: "https://mcp.example.com/mcp",
//		Issuer:   "https://login.example.com/ids",
//		ToolScopes: map[string][]string{"delete_user": {scope.AdminWebAPI}},
//	})
//	// github.com/modelcontextprotocol/go-sdk:
//	mux.Handle("/mcp", guard.GoSDK(mcp.NewStreamableHTTPHandler(getServer, nil)))
//	// github.com/mark3labs/mcp-go:
//	mux.Handle("/mcp", guard.Handler(server.NewStreamableHTTPServer(s)))
//	mux.Handle("/.well-known/oauth-protected-resource/", guard.Metadata())
//
// A tool handler reads the claims with accesstoken.ClaimsFrom(ctx)
// (mcp-go) or Claims(req.Extra.TokenInfo) (go-sdk).
//
// The client side is Client: an *http.Client, for either SDK's
// streamable transport, that answers a 401 as the MCP specification
// says: it reads the challenge's resource_metadata, the protected
// resource metadata and the authorization server's metadata (RFC 8414),
// and asks that server for a token with client.Config's credentials (a
// secret, a key for private_key_jwt, a certificate, a DPoP key), for the
// endpoint as its resource (RFC 8707) and the scope the challenge names;
// a 403 insufficient_scope gets one token with the scope added, and one
// retry.
//
// [MCP authorization]: https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization
package mcpauth
