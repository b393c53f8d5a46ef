package accesstoken

import (
	"context"
	"fmt"
	"net/http"

	"github.com/idsauth/idsauth/internal/jwks"
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

// discoverDocument reads the issuer's discovery document, whose "issuer"
// must be issuer exactly.
func discoverDocument(ctx context.Context, client *http.Client, issuer string) (*jwks.Document, error) {
	doc, err := jwks.Discover(ctx, client, issuer)
	if err != nil {
		return nil, fmt.Errorf("accesstoken: %w", err)
	}
	return doc, nil
}
