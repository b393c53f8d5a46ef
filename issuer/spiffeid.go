package issuer

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// SPIFFE IDs, read as the SPIFFE ID specification (SPIFFE-ID.md §2)
// writes them, and no looser: the scheme "spiffe" in lower case, a trust
// domain of lower-case letters, digits, ".", "-" and "_", and a path of
// segments of letters, digits, ".", "-" and "_", none empty, "." or
// "..". No percent-encoding, port, user, query, fragment or trailing
// slash: two IDs are one exactly when their strings are.

// maxSPIFFEID bounds a SPIFFE ID (the specification's 2048 bytes).
const maxSPIFFEID = 2048

// splitSPIFFEID returns the trust domain and the path of id, a SPIFFE ID,
// or why it is none.
func splitSPIFFEID(id string) (td, path string, err error) {
	rest, ok := strings.CutPrefix(id, "spiffe://")
	switch {
	case !ok:
		return "", "", errors.New(`not a SPIFFE ID: want "spiffe://" and a trust domain`)
	case len(id) > maxSPIFFEID:
		return "", "", fmt.Errorf("a SPIFFE ID of more than %d bytes", maxSPIFFEID)
	}
	td, path, _ = strings.Cut(rest, "/")
	if err := checkTrustDomain(td); err != nil {
		return "", "", err
	}
	if path == "" {
		if strings.HasSuffix(rest, "/") {
			return "", "", errors.New("a SPIFFE ID ends in no slash")
		}
		return td, "", nil
	}
	for seg := range strings.SplitSeq(path, "/") {
		switch {
		case seg == "":
			return "", "", errors.New("a SPIFFE ID's path has no empty segment, nor a trailing slash")
		case seg == "." || seg == "..":
			return "", "", errors.New(`a SPIFFE ID's path has no "." or ".." segment`)
		}
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
				return "", "", fmt.Errorf("a SPIFFE ID's path holds letters, digits, \".\", \"-\" and \"_\" only, not %q", c)
			}
		}
	}
	return td, "/" + path, nil
}

// checkTrustDomain refuses a trust domain name that is none.
func checkTrustDomain(td string) error {
	if td == "" {
		return errors.New("empty trust domain")
	}
	if len(td) > 255 {
		return errors.New("a trust domain of more than 255 bytes")
	}
	for i := 0; i < len(td); i++ {
		if c := td[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("a trust domain holds lower-case letters, digits, \".\", \"-\" and \"_\" only, not %q", c)
		}
	}
	return nil
}

// isLoopbackHost reports whether host (a URL's, without its port) is a
// loopback address, or "localhost".
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
