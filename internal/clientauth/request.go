package clientauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrRedirect is a token endpoint's answer that redirects: a token request
// never follows one, since it carries the client's credentials (a secret,
// or an assertion the other origin could redeem once).
var ErrRedirect = errors.New("the token endpoint answered with a redirect, which a token request never follows: it carries the client's credentials; set the token URL to the endpoint itself")

// RefuseRedirects returns a copy of hc (of http.DefaultClient when nil)
// that follows no redirect: a 3xx answer fails with an error wrapping
// ErrRedirect, naming the status and the origin it pointed to. hc itself
// is unchanged.
func RefuseRedirects(hc *http.Client) *http.Client {
	c := *http.DefaultClient
	if hc != nil {
		c = *hc
	}
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		status := 0
		if req.Response != nil {
			status = req.Response.StatusCode
		}
		return fmt.Errorf("%w (HTTP %d to %s)", ErrRedirect, status, origin(req.URL))
	}
	return &c
}

// origin is u's scheme and host, all that an error names of a redirect.
func origin(u *url.URL) string {
	return u.Scheme + "://" + u.Host
}

// reserved are the token request's parameters that the grant, the scope,
// the resource indicators and the client's credentials set: extra
// parameters never replace them, whatever their case (ASP.NET, and so
// IdentityServer, reads form names without regard to case).
var reserved = []string{"grant_type", "scope", "resource", "client_id", "client_secret", "client_assertion", "client_assertion_type"}

// CheckParams refuses extra token request parameters that would replace
// one the request sets itself, naming it.
func CheckParams(p url.Values) error {
	for name := range p {
		for _, r := range reserved {
			if strings.EqualFold(name, r) {
				return fmt.Errorf("extra token request parameter %q: the request sets it itself (%s)", name, strings.Join(reserved, ", "))
			}
		}
	}
	return nil
}
