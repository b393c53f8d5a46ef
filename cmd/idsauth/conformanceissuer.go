package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/kit"
)

// runTokenEndpoint runs the tables of the issuer's token endpoint.
func runTokenEndpoint(ctx context.Context, f conformanceFlags, cfg client.Config) (*report, error) {
	meta, err := discoverIssuer(ctx, cfg.HTTPClient, f.issuer)
	if err != nil {
		return nil, err
	}
	cfg.TokenURL = meta.TokenEndpoint
	scopes := strings.Fields(f.scopes)
	rt, err := newRunnerTokens(ctx, cfg, meta, f.otherScope)
	if err != nil {
		return nil, err
	}
	good := rt.Good(scopes)
	if good.Skip != "" {
		return nil, &usageError{good.Skip}
	}
	u, err := url.Parse(meta.TokenEndpoint)
	if err != nil {
		return nil, err
	}
	rep := &report{Target: meta.TokenEndpoint}
	s := &kit.HTTP{Origin: u.Scheme + "://" + u.Host, Client: apiClient(cfg.HTTPClient)}
	scope := "pd_AdminWebApi"
	if len(scopes) > 0 {
		scope = scopes[0]
	}
	profile := kit.TokenEndpoint(u.EscapedPath(), cfg.ClientID, cfg.ClientSecret, f.profile, scope)
	if cfg.ClientSecret == "" {
		for i := range profile {
			if profile[i].Name != "an unknown client" && profile[i].Name != "no client credentials" {
				profile[i].Skip = "the client authenticates with a key or a certificate, not a secret: the table's requests carry one"
			}
		}
	}
	rep.add("profile", s, profile)
	rep.add("token", s, tokenCases(ctx, meta, good, cfg))
	rep.add("introspection", s, introspectionCases(meta))
	rep.add("revocation", s, revocationCases(meta, cfg))
	rep.add("dpop", s, dpopEndpointCases(rt, meta, scopes))
	mtls := kit.Case{Name: "a token over mutual TLS is bound to the certificate (RFC 8705 §3)", OwnChecks: true}
	if tok, _ := rt.CertificateBound(scopes); tok.Skip != "" {
		mtls.Skip = tok.Skip
	} else {
		mtls.Source, mtls.Got, mtls.Check = tok.Source, &kit.Answer{Status: http.StatusOK}, func(*kit.Problems, kit.Answer) {}
	}
	rep.add("mtls", s, []kit.Case{mtls})
	return rep, nil
}

// answered is a case whose answer is in hand: check judges it.
func answered(name, source string, check func(p *kit.Problems, a kit.Answer)) kit.Case {
	return kit.Case{Name: name, Source: source, OwnChecks: true, Got: &kit.Answer{Status: http.StatusOK}, Check: check}
}

// tokenCases check a token of the issuer's as RFC 9068 has it: typ, the
// claims, and a signature by a key of its JWKS.
func tokenCases(ctx context.Context, meta *issuerMetadata, good kit.Token, cfg client.Config) []kit.Case {
	parts := strings.Split(good.Value, ".")
	if len(parts) != 3 {
		return []kit.Case{{Name: "an RFC 9068 access token", Skip: "the client's tokens are reference tokens: nothing to read in them"}}
	}
	var header map[string]any
	var claims map[string]any
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	_ = json.Unmarshal(hb, &header)
	_ = json.Unmarshal(cb, &claims)
	shape := answered("an RFC 9068 access token: its header and claims", good.Source, func(p *kit.Problems, _ kit.Answer) {
		if typ, _ := header["typ"].(string); !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") {
			p.Addf("typ %q, want at+jwt (RFC 9068 §2.1)", typ)
		}
		if kid, _ := header["kid"].(string); kid == "" {
			p.Addf("no kid in the header")
		}
		if iss, _ := claims["iss"].(string); iss != meta.Issuer {
			p.Addf("iss %q, want %q", iss, meta.Issuer)
		}
		for _, c := range []string{"exp", "iat", "client_id", "jti", "aud"} {
			if claims[c] == nil {
				p.Addf("no %s claim (RFC 9068 §2.2)", c)
			}
		}
		if exp, _ := claims["exp"].(float64); exp != 0 && time.Unix(int64(exp), 0).Before(time.Now()) {
			p.Addf("exp in the past")
		}
	})
	sig := answered("an RFC 9068 access token: signed by a key of the issuer's JWKS", good.Source, func(p *kit.Problems, _ kit.Answer) {
		if meta.JWKSURI == "" {
			p.Addf("the metadata names no jwks_uri")
			return
		}
		keys, err := accesstoken.NewJWKS(ctx, accesstoken.JWKSConfig{URL: meta.JWKSURI, HTTPClient: cfg.HTTPClient})
		if err != nil {
			p.Addf("the JWKS: %v", err)
			return
		}
		aud, _ := claims["aud"].([]any)
		audience := []string{}
		for _, a := range aud {
			if s, ok := a.(string); ok {
				audience = append(audience, s)
			}
		}
		if s, ok := claims["aud"].(string); ok {
			audience = append(audience, s)
		}
		v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: meta.Issuer, Audience: audience, Keys: keys, AllowBoundTokens: true})
		if err == nil {
			_, err = v.Validate(ctx, good.Value, accesstoken.Presentation{})
		}
		if err != nil {
			p.Addf("it does not validate with the issuer's keys: %v", err)
		}
	})
	return []kit.Case{shape, sig}
}

// introspectionCases check that the introspection endpoint discovery
// names takes no call without credentials (RFC 7662 §2.1).
func introspectionCases(meta *issuerMetadata) []kit.Case {
	if meta.IntrospectionEndpoint == "" {
		return []kit.Case{{Name: "introspection", Skip: "the issuer names no introspection_endpoint"}}
	}
	c := kit.Case{Name: "introspection without credentials is refused (RFC 7662 §2.1)", OwnChecks: true, Check: func(p *kit.Problems, a kit.Answer) {
		if a.Status != http.StatusUnauthorized && a.Status != http.StatusBadRequest {
			p.Addf("status %d, want 401 (or 400) invalid_client", a.Status)
		}
	}}
	var err error
	if c.Req, err = post(meta.IntrospectionEndpoint, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, url.Values{"token": {"conformance-no-such-token"}}); err != nil {
		c.Skip = err.Error()
	}
	return []kit.Case{c}
}

// revocationCases check that revoking a token nobody holds, as the
// client, answers 200 (RFC 7009 §2.2).
func revocationCases(meta *issuerMetadata, cfg client.Config) []kit.Case {
	if meta.RevocationEndpoint == "" {
		return []kit.Case{{Name: "revocation", Skip: "the issuer names no revocation_endpoint"}}
	}
	if cfg.ClientSecret == "" && cfg.Key == nil {
		return []kit.Case{{Name: "revocation", Skip: "the client authenticates with a certificate: the runner revokes with a secret or a key"}}
	}
	c := kit.Case{Name: "revoking a token nobody holds answers 200 (RFC 7009 §2.2)", OwnChecks: true, Check: func(p *kit.Problems, a kit.Answer) {
		if a.Status != http.StatusOK {
			p.Addf("status %d (body %q), want 200", a.Status, a.Body)
		}
	}}
	form := url.Values{"token": {"conformance-no-such-token"}}
	h, err := authenticated(cfg, form)
	if err == nil {
		c.Req, err = post(meta.RevocationEndpoint, h, form)
	}
	if err != nil {
		c.Skip = err.Error()
	}
	return []kit.Case{c}
}

// dpopEndpointCases check DPoP at the token endpoint, where offered: a
// proof binds the token to its key (token_type DPoP, cnf.jkt its
// thumbprint); a proof for another URL is refused, 400
// invalid_dpop_proof.
func dpopEndpointCases(rt *runnerTokens, meta *issuerMetadata, scopes []string) []kit.Case {
	tok, prover := rt.DPoP(scopes)
	if tok.Skip != "" {
		return []kit.Case{{Name: "DPoP", Skip: tok.Skip}}
	}
	bound := answered("a proof binds the token to its key (RFC 9449 §5)", tok.Source, func(p *kit.Problems, _ kit.Answer) {
		jkt, _ := prover.JKT()
		parts := strings.Split(tok.Value, ".")
		if len(parts) != 3 {
			return // a reference token: its binding is the introspection's to tell
		}
		b, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var c struct {
			Cnf map[string]string `json:"cnf"`
		}
		if json.Unmarshal(b, &c) != nil || c.Cnf["jkt"] != jkt {
			p.Addf("cnf %v, want jkt %s", c.Cnf, jkt)
		}
	})
	proof, err := prover.Proof(http.MethodPost, meta.TokenEndpoint+"-elsewhere", "", "", time.Now())
	bad := kit.Case{Name: "a proof for another URL is refused (400 invalid_dpop_proof)", OwnChecks: true, Check: func(p *kit.Problems, a kit.Answer) {
		var e struct {
			Error string `json:"error"`
		}
		if a.Status != http.StatusBadRequest || json.Unmarshal([]byte(a.Body), &e) != nil || e.Error != "invalid_dpop_proof" {
			p.Addf("status %d, body %q: want 400 invalid_dpop_proof", a.Status, a.Body)
		}
	}}
	if err != nil {
		bad.Skip = err.Error()
		return []kit.Case{bound, bad}
	}
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(scopes, " ")}}
	h, err := authenticated(rt.cfg, form)
	if err == nil {
		h.Set("DPoP", proof)
		bad.Req, err = post(meta.TokenEndpoint, h, form)
	}
	if err != nil {
		bad.Skip = err.Error()
	}
	return []kit.Case{bound, bad}
}

// authenticated is how a request of form to the issuer authenticates as
// the client: its headers (HTTP Basic with a secret), and, with a key, a
// private_key_jwt assertion added to form, for the token endpoint (RFC
// 7523 §3, which the issuer's other endpoints take too).
func authenticated(cfg client.Config, form url.Values) (http.Header, error) {
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	switch {
	case cfg.Key != nil:
		s, err := clientauth.NewSigner(cfg.Key, cfg.KeyAlg, cfg.KeyID)
		if err != nil {
			return nil, err
		}
		a, err := s.Assertion(cfg.ClientID, cfg.TokenURL, time.Now())
		if err != nil {
			return nil, err
		}
		form.Set("client_id", cfg.ClientID)
		form.Set("client_assertion_type", clientauth.AssertionType)
		form.Set("client_assertion", a)
	case cfg.ClientSecret != "":
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(cfg.ClientID)+":"+url.QueryEscape(cfg.ClientSecret))))
	}
	return h, nil
}

// post is a POST of form to endpoint, with header.
func post(endpoint string, header http.Header, form url.Values) (kit.Request, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return kit.Request{}, err
	}
	return kit.Request{Method: http.MethodPost, Path: u.RequestURI(), Header: header, Body: form.Encode()}, nil
}
