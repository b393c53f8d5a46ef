package accesstoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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
// must be issuer exactly: its OpenID Connect discovery document
// ({issuer}/.well-known/openid-configuration), or, where that is not
// found (404), its RFC 8414 authorization server metadata, the
// well-known path inserted between the issuer's host and path
// (https://host/.well-known/oauth-authorization-server/ids for
// https://host/ids), as an OAuth server that is no OpenID provider
// publishes it.
func discoverDocument(ctx context.Context, client *http.Client, issuer string) (*discoveryDocument, error) {
	doc, err := fetchDocument(ctx, client, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration")
	if errors.Is(err, errNotFound) {
		if u, perr := url.Parse(issuer); perr == nil && u.Host != "" {
			path := strings.TrimSuffix(u.EscapedPath(), "/")
			doc, err = fetchDocument(ctx, client, u.Scheme+"://"+u.Host+"/.well-known/oauth-authorization-server"+path)
		}
	}
	if err != nil {
		return nil, err
	}
	if doc.Issuer != issuer {
		return nil, fmt.Errorf("accesstoken: discovery: document names issuer %q, want %q", doc.Issuer, issuer)
	}
	return doc, nil
}

// errNotFound is a discovery document's 404.
var errNotFound = errors.New("not found")

// fetchDocument reads the metadata document at u.
func fetchDocument(ctx context.Context, client *http.Client, u string) (*discoveryDocument, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("accesstoken: discovery: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("accesstoken: discovery: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("accesstoken: discovery: %s answered %s: %w", u, resp.Status, errNotFound)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("accesstoken: discovery: %s answered %s", u, resp.Status)
	}
	var doc discoveryDocument
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("accesstoken: discovery: %s: %w", u, err)
	}
	return &doc, nil
}
