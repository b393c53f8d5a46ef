package jwks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Document holds what is read of an issuer's discovery document (OpenID
// Connect Discovery 1.0 §3, RFC 8414 §2).
type Document struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// Discover reads the discovery document of issuer with c (a Client),
// whose "issuer" must be issuer exactly: its OpenID Connect discovery
// document ({issuer}/.well-known/openid-configuration), or, where that is
// not found (404), its RFC 8414 authorization server metadata, the
// well-known path inserted between the issuer's host and path
// (https://host/.well-known/oauth-authorization-server/ids for
// https://host/ids), as an OAuth server that is no OpenID provider
// publishes it.
func Discover(ctx context.Context, c *http.Client, issuer string) (*Document, error) {
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	data, err := get(ctx, c, u, nil)
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusNotFound {
		if iu, perr := url.Parse(issuer); perr == nil && iu.Host != "" {
			u = iu.Scheme + "://" + iu.Host + "/.well-known/oauth-authorization-server" + strings.TrimSuffix(iu.EscapedPath(), "/")
			data, err = get(ctx, c, u, nil)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: %s: %w", u, err)
	}
	var doc Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("discovery: %s: %w", u, err)
	}
	if doc.Issuer != issuer {
		return nil, fmt.Errorf("discovery: document names issuer %q, want %q", doc.Issuer, issuer)
	}
	return &doc, nil
}
