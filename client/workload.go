package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// The client's credential as a token that something else gives it: a
// workload's identity (Config.AssertionFile, Config.AssertionFunc).

// Client assertion types (RFC 7523 §2.2; draft-ietf-oauth-spiffe-client-auth).
const (
	// AssertionJWTBearer is RFC 7523's type: any JWT, a Kubernetes
	// service-account token, a GitHub Actions or AWS STS token, a JWT-SVID.
	AssertionJWTBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// AssertionJWTSPIFFE is the SPIFFE draft's type, for a JWT-SVID.
	AssertionJWTSPIFFE = "urn:ietf:params:oauth:client-assertion-type:jwt-spiffe"
)

// maxAssertionFile bounds what is read of Config.AssertionFile.
const maxAssertionFile = 16 << 10

// workloadAssertion returns the function that gives c's assertion for
// each token request, or nil when c has none, and an error for a
// configuration that sets it beside another credential.
func (c *Config) workloadAssertion() (func(ctx context.Context) (string, error), error) {
	switch {
	case c.AssertionFile == "" && c.AssertionFunc == nil:
		return nil, nil
	case c.AssertionFile != "" && c.AssertionFunc != nil:
		return nil, errors.New("client: set Config.AssertionFile or Config.AssertionFunc, not both")
	case c.ClientSecret != "" || c.Key != nil:
		return nil, errors.New("client: a workload's assertion is the client's credential: set no ClientSecret or Key beside it")
	case c.AssertionType != "" && c.AssertionType != AssertionJWTBearer && c.AssertionType != AssertionJWTSPIFFE:
		return nil, fmt.Errorf("client: Config.AssertionType %q: want AssertionJWTBearer or AssertionJWTSPIFFE", c.AssertionType)
	case c.AssertionFunc != nil:
		return c.AssertionFunc, nil
	}
	path := c.AssertionFile
	return func(context.Context) (string, error) { return readAssertionFile(path) }, nil
}

// readAssertionFile reads the token in path, as it is now: the file is
// read at each token request, so that one another process renews (the
// kubelet's projected token, a SPIFFE helper's JWT-SVID) is always the
// current one.
func readAssertionFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("client: the assertion file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAssertionFile+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("client: the assertion file: %w", err)
	case len(b) > maxAssertionFile:
		return "", fmt.Errorf("client: the assertion file %s is larger than %d bytes", path, maxAssertionFile)
	}
	tok := string(bytes.TrimSpace(b))
	if tok == "" {
		return "", fmt.Errorf("client: the assertion file %s is empty", path)
	}
	return tok, nil
}
