package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idsauth/idsauth/issuer"
)

// printTrust prints, for check-config, each trusted issuer: its kind,
// where its keys come from, what its tokens must carry, and the subjects
// by which its tokens authenticate the file's clients.
func printTrust(w io.Writer, cfg *issuer.Config) {
	if len(cfg.TrustedIssuers) == 0 {
		return
	}
	fmt.Fprintln(w, "\ntrusted issuers (workload identities):")
	for _, ti := range cfg.TrustedIssuers {
		id := ti.Issuer
		if ti.Kind == "spiffe" {
			id = "spiffe://" + ti.TrustDomain
		}
		fmt.Fprintf(w, "  %s (%s)\n", id, ti.Kind)
		if ti.Kind == "spiffe" && ti.Issuer != "" {
			fmt.Fprintf(w, "    iss       %s, when a JWT-SVID carries one\n", ti.Issuer)
		}
		src := "discovery: " + strings.TrimSuffix(ti.Issuer, "/") + "/.well-known/openid-configuration"
		switch {
		case ti.JWKSURI != "":
			src = "JWKS " + ti.JWKSURI
		case ti.BundleEndpoint != "":
			src = "SPIFFE bundle endpoint " + ti.BundleEndpoint
		case ti.BundleFile != "":
			src = "SPIFFE bundle file " + ti.BundleFile
		case ti.InCluster:
			api := ti.APIServer
			if api == "" {
				api = "https://kubernetes.default.svc"
			}
			src = "in-cluster JWKS " + strings.TrimSuffix(api, "/") + "/openid/v1/jwks, with the pod's token"
		}
		fmt.Fprintf(w, "    keys      %s\n", src)
		if ti.CAFile != "" {
			fmt.Fprintf(w, "    ca        %s\n", ti.CAFile)
		}
		aud := strings.Join(ti.Audience, " ")
		if aud == "" {
			aud = "the token endpoint or the issuer URL (default)"
		}
		fmt.Fprintf(w, "    audience  %s\n", aud)
		fmt.Fprintf(w, "    lifetime  at most %s; clock skew %s; keys kept %s while it is down\n",
			orDefault(ti.MaxTokenLifetime, 2*time.Hour), orDefault(ti.ClockSkew, 30*time.Second), orDefault(ti.KeysGrace, time.Hour))
		if ti.JWTBearerGrant {
			fmt.Fprintf(w, "    grant     jwt-bearer, scopes at most %s\n", strings.Join(ti.Scopes, " "))
		}
		n := 0
		for _, c := range cfg.Clients {
			for _, fc := range c.FederatedCredentials {
				if fc.Issuer == id || fc.Issuer == "" && strings.HasPrefix(fc.Subject, id+"/") {
					fmt.Fprintf(w, "    subject   %s -> client %s\n", fc.Subject, c.ClientID)
					n++
				}
			}
		}
		if n == 0 {
			fmt.Fprintln(w, "    subject   none of the file's clients (a registry's may name some)")
		}
	}
}

// printClientFederation prints how a client's own key set or workload
// authenticates it.
func printClientFederation(w io.Writer, c issuer.ClientConfig) {
	if c.JWKSURI != "" {
		fmt.Fprintf(w, "    keys      private_key_jwt, from %s\n", c.JWKSURI)
	}
	for _, fc := range c.FederatedCredentials {
		iss := fc.Issuer
		if iss == "" {
			iss = "its trust domain"
		}
		fmt.Fprintf(w, "    workload  %s of %s\n", fc.Subject, iss)
	}
	if len(c.FederatedCredentials) > 0 {
		fmt.Fprintf(w, "    age       a workload's token is taken until %s after its iat\n", orDefault(c.MaxAssertionAge, time.Hour))
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
