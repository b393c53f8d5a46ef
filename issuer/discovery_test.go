package issuer_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/idsauth/idsauth/issuer"
)

// TestDiscoveryKeepsRFC8414Section2: the discovery document and the RFC
// 8414 metadata, under both profiles, keep the rules of RFC 8414 §2:
// issuer, token_endpoint and response_types_supported are present, and
// for each of the token, introspection and revocation endpoints whose
// ..._auth_methods_supported lists private_key_jwt or client_secret_jwt,
// the endpoint is named and ..._auth_signing_alg_values_supported is
// present, a list of algorithms without "none". The three endpoints take
// the same assertions (one authentication), so the three lists are one.
// authlib's AuthorizationServerMetadata.validate() refused the document
// that lacked the introspection and revocation lists.
func TestDiscoveryKeepsRFC8414Section2(t *testing.T) {
	for _, profile := range []string{"rfc", "identityserver"} {
		s := newServer(t, func(c *issuer.Config) { withReference(c); c.Profile = profile })
		s.Config.Handler.(*http.ServeMux).Handle("/.well-known/oauth-authorization-server/", s.iss.MetadataHandler())
		for name, url := range map[string]string{
			"discovery":         s.issuerURL() + "/.well-known/openid-configuration",
			"RFC 8414 metadata": s.URL + "/.well-known/oauth-authorization-server/ids",
		} {
			t.Run(profile+"/"+name, func(t *testing.T) {
				a := do(t, mustRequest(t, http.MethodGet, url))
				if a.status != 200 {
					t.Fatalf("%d %s", a.status, a.raw)
				}
				for _, field := range []string{"issuer", "token_endpoint", "response_types_supported"} {
					if a.body[field] == nil {
						t.Errorf("%s is missing", field)
					}
				}
				var lists []string
				for _, endpoint := range []string{"token", "introspection", "revocation"} {
					methods := stringList(a.body[endpoint+"_endpoint_auth_methods_supported"])
					if !slices.Contains(methods, "private_key_jwt") && !slices.Contains(methods, "client_secret_jwt") {
						t.Errorf("%s: no assertion method listed (%v): the document would not exercise the rule", endpoint, methods)
						continue
					}
					if a.body[endpoint+"_endpoint"] == nil {
						t.Errorf("%s_endpoint is missing beside its auth methods", endpoint)
					}
					field := endpoint + "_endpoint_auth_signing_alg_values_supported"
					algs := stringList(a.body[field])
					if len(algs) == 0 || slices.Contains(algs, "none") {
						t.Errorf("%s = %v: §2 requires it, without none, when %v lists private_key_jwt", field, a.body[field], methods)
					}
					lists = append(lists, fmt.Sprint(algs))
				}
				if len(slices.Compact(lists)) > 1 {
					t.Errorf("the endpoints list different algorithms for one authentication: %v", lists)
				}
			})
		}
	}
}

// stringList returns v's strings when v is a JSON array of strings, else nil.
func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}
