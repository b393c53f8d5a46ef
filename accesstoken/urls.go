package accesstoken

import (
	"fmt"
	"net/url"
)

// A URL this package fetches carries no userinfo ("user:password@host"):
// the password would be in every log line and error that names the URL,
// and net/http would send it as Basic credentials, even for an
// Introspection that says Unauthenticated. Such a URL is refused where it
// is given (Introspection.Endpoint, JWKSConfig.URL, the issuer whose
// discovery document is read) and where a discovery document names it,
// with an error that names the field and holds nothing of the URL.

// checkURL returns an error naming field if raw, a URL to be fetched,
// does not parse or holds userinfo.
func checkURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// Not err: a *url.Error holds the URL, and its reason may quote a
		// piece of it.
		return fmt.Errorf("accesstoken: %s is not a URL", field)
	}
	return refuseUserinfo(field, u)
}

// refuseUserinfo returns an error naming field if u holds userinfo.
func refuseUserinfo(field string, u *url.URL) error {
	if u.User == nil {
		return nil
	}
	return fmt.Errorf("accesstoken: %s holds a user name or password (userinfo): it would reach the logs and go as Basic authentication; "+
		"give the API's credentials as Introspection.ClientID and ClientSecret, and a proxy's in HTTPClient's Transport", field)
}

// checkIssuerURL refuses an issuer with userinfo, and, when its discovery
// document is read (discovered), one that is not a URL. An issuer that is
// only compared with "iss" need not parse.
func checkIssuerURL(field, issuer string, discovered bool) error {
	if discovered {
		return checkURL(field, issuer)
	}
	if u, err := url.Parse(issuer); err == nil {
		return refuseUserinfo(field, u)
	}
	return nil
}
