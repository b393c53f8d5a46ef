package accesstoken

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// discover reads the issuer's discovery document and returns its jwks_uri.
func discover(ctx context.Context, client *http.Client, issuer string) (string, error) {
	doc, err := discoverDocument(ctx, client, issuer)
	if err != nil {
		return "", err
	}
	if doc.JWKSURI == "" {
		return "", fmt.Errorf("accesstoken: discovery: %s names no jwks_uri", issuer)
	}
	if err := checkURL("the jwks_uri of "+issuer+"'s discovery document", doc.JWKSURI); err != nil {
		return "", err
	}
	return doc.JWKSURI, nil
}

// discoveryDocument holds what a validator reads of a discovery document.
type discoveryDocument struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// discoverDocument reads the issuer's discovery document, whose "issuer"
// must be issuer exactly.
func discoverDocument(ctx context.Context, client *http.Client, issuer string) (*discoveryDocument, error) {
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("accesstoken: discovery: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("accesstoken: discovery: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("accesstoken: discovery: %s answered %s", u, resp.Status)
	}
	var doc discoveryDocument
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("accesstoken: discovery: %s: %w", u, err)
	}
	if doc.Issuer != issuer {
		return nil, fmt.Errorf("accesstoken: discovery: document names issuer %q, want %q", doc.Issuer, issuer)
	}
	return &doc, nil
}
