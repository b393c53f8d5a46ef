package jwks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Document holds what is read of an issuer's discovery document (OpenID
// Connect Discovery 1.0 §3, RFC 8414 §2).
type Document struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// Discover reads the discovery document of issuer, at
// {issuer}/.well-known/openid-configuration, with c (a Client), whose
// "issuer" must be issuer exactly.
func Discover(ctx context.Context, c *http.Client, issuer string) (*Document, error) {
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	data, err := get(ctx, c, u, nil)
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
