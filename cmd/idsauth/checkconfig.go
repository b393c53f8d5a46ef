package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
)

func checkConfig(ctx context.Context, e env, args []string) error {
	fs := flags(e, "check-config", "[-at TIME] FILE",
		`Load a configuration file exactly as idsauth serve does, at start and at a
reload (every field checked, key files read), and print what it holds:
clients with their scopes, audiences and token lifetimes, the keys published
now with their kids, the signing one first, and the key schedule: when each
key is published and signs, in UTC. serve's "limiterStore" and "tokenStore"
sections are checked as serve checks them (the token store's Redis is asked
for its eviction policy and persistence), and so is "clientStore" (its
PostgreSQL is loaded, its registered clients checked against the file),
and SCIM tenants ("scimTenants",
as the example service's) too. A bad file exits 1 with the error naming the
file and the field. Run it before sending the issuer SIGHUP.`)
	atFlag := fs.String("at", "", "load as an issuer whose clock says this RFC 3339 time (default now)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("give exactly one configuration file")
	}
	at := time.Now()
	if *atFlag != "" {
		t, err := time.Parse(time.RFC3339, *atFlag)
		if err != nil {
			return usagef("-at %q: want an RFC 3339 time such as 2026-06-01T00:00:00Z", *atFlag)
		}
		at = t
	}
	file, err := loadServeConfig(fs.Arg(0))
	if err != nil {
		return err
	}
	// The stores, then the issuer, as serve makes them: files read, the
	// token store's Redis asked whether it may evict or forget.
	warn := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	if file.LimiterStore != nil {
		l, err := newLimiterStore(file, warn)
		if err != nil {
			return inFile(fs.Arg(0), err)
		}
		l.rdb.Close()
	}
	if file.TokenStore != nil {
		_, rdb, err := newTokenStore(ctx, file, warn)
		if err != nil {
			return inFile(fs.Arg(0), err)
		}
		rdb.Close()
	}
	cfg := &file.Config
	iss, err := issuer.New(cfg, issuer.WithClock(func() time.Time { return at }))
	if err != nil {
		return inFile(fs.Arg(0), err)
	}
	var registry string
	if file.ClientStore != nil {
		reg, err := newRegistry(ctx, file, iss, warn, e.getenv)
		if err != nil {
			return inFile(fs.Arg(0), err)
		}
		err = waitRegistry(ctx, reg)
		reg.Close()
		st := reg.Status()
		if err != nil {
			return fmt.Errorf("%s: clientStore.postgres: the client registry cannot be loaded: %w", fs.Arg(0), err)
		}
		registry = fmt.Sprintf("\nClient registry (idsauth serve): PostgreSQL ($%s), generation %d: %d registered clients, %d API resources, %d left out (logged above)\n",
			file.ClientStore.Postgres.URLEnv, st.Generation, st.Clients, st.APIResources, st.Left)
	}
	w := e.stdout
	profile := cfg.Profile
	if profile == "" {
		profile = "rfc"
	}
	fmt.Fprintf(w, "%s: ok\n\nissuer  %s\ntoken   %s\njwks    %s\nprofile %s\n", fs.Arg(0), iss.URL(), iss.TokenURL(), iss.JWKSURL(), profile)
	if cfg.DPoP.RequireNonce || cfg.DPoP.ProofMaxAge != 0 {
		age := int(cfg.DPoP.ProofMaxAge / time.Second)
		if age == 0 {
			age = 60
		}
		fmt.Fprintf(w, "dpop    proofs live %ds; nonces required: %v\n", age, cfg.DPoP.RequireNonce)
	}
	printMTLS(w, cfg)
	printTrust(w, cfg)
	fmt.Fprintln(w, "\nkeys (the first signs):")
	for i, kid := range iss.KeyIDs() {
		role := "published"
		if i == 0 {
			role = "signs"
		}
		fmt.Fprintf(w, "  %-9s %s\n", role, kid)
	}
	printSchedule(w, iss, at)
	fmt.Fprintln(w, "\nclients:")
	clients := slices.Clone(cfg.Clients)
	slices.SortFunc(clients, func(a, b issuer.ClientConfig) int { return strings.Compare(a.ClientID, b.ClientID) })
	for _, c := range clients {
		lifetime := int(c.AccessTokenLifetime / time.Second)
		if lifetime == 0 {
			lifetime = 3600
		}
		aud := strings.Join(c.Audience, " ")
		switch {
		case aud == "" && profile == "identityserver" && len(cfg.APIResources) > 0:
			aud = "the API resources of the scopes granted (identityserver profile)"
		case aud == "":
			aud = iss.URL() + "/resources (default)"
		}
		fmt.Fprintf(w, "  %s\n    scopes    %s\n    audience  %s\n    lifetime  %ds\n    secrets   %d hash(es)\n",
			c.ClientID, strings.Join(c.Scopes, " "), aud, lifetime, len(c.SecretHashes))
		if len(c.PublicKeys) > 0 {
			fmt.Fprintf(w, "    keys      %d public key(s), private_key_jwt\n", len(c.PublicKeys))
		}
		for _, cc := range c.Claims {
			fmt.Fprintf(w, "    claim     client_%s: %s\n", cc.Type, cc.Value)
		}
		if c.RequireDPoP {
			fmt.Fprintln(w, "    dpop      required: every token request carries a proof")
		}
		if c.AccessTokenType == "reference" {
			fmt.Fprintln(w, "    tokens    reference (introspected, revocable)")
		}
		printClientMTLS(w, c)
		printClientFederation(w, c)
	}
	if len(cfg.APIResources) > 0 {
		fmt.Fprintf(w, "\nAPI resources (may introspect at %s/connect/introspect):\n", iss.URL())
		list := slices.SortedFunc(slices.Values(cfg.APIResources), func(a, b issuer.APIResourceConfig) int { return strings.Compare(a.Name, b.Name) })
		for _, a := range list {
			fmt.Fprintf(w, "  %s\n    scopes    %s\n    secrets   %d hash(es)\n", a.Name, strings.Join(a.Scopes, " "), len(a.SecretHashes))
		}
	}
	if len(file.SCIMTenants) > 0 {
		fmt.Fprintln(w, "\nSCIM tenants:")
		list := slices.SortedFunc(slices.Values(file.SCIMTenants), func(a, b middleware.TenantConfig) int { return strings.Compare(a.Tenant, b.Tenant) })
		for _, tc := range list {
			fmt.Fprintf(w, "  %-20s %d token hash(es)\n", tc.Tenant, len(tc.TokenHashes))
		}
	}
	if s := file.LimiterStore; s != nil {
		mode := s.Redis.OnUnavailable
		if mode == "" {
			mode = "open"
		}
		fmt.Fprintf(w, "\nLimiter store (idsauth serve): %s, TLS %v, fails %s\n", s.Redis.where(), s.Redis.TLS, mode)
	}
	if s := file.TokenStore; s != nil {
		fmt.Fprintf(w, "\nToken store (idsauth serve): %s, TLS %v\n", s.Redis.where(), s.Redis.TLS)
	}
	fmt.Fprint(w, registry)
	return nil
}

// printSchedule prints when each key is published and signs, in UTC, and
// what it does at.
func printSchedule(w io.Writer, iss *issuer.Issuer, at time.Time) {
	at = at.UTC()
	fmt.Fprintf(w, "\nkey schedule (UTC; now %s):\n", at.Format(time.RFC3339))
	when := func(t time.Time, none string) string {
		if t.IsZero() {
			return none
		}
		return t.UTC().Format(time.RFC3339)
	}
	signer := iss.KeyIDs()[0]
	for _, k := range iss.KeySchedule() {
		now := "published now"
		switch {
		case k.KID == signer:
			now = "signs now"
		case !k.PublishedUntil.IsZero() && !at.Before(k.PublishedUntil):
			now = "retired"
		case at.Before(k.PublishedFrom):
			now = "not published yet"
		}
		fmt.Fprintf(w, "  %s (%s): %s\n", k.KID, k.Alg, now)
		fmt.Fprintf(w, "    published  from %-20s  until %s\n", when(k.PublishedFrom, "the start"), when(k.PublishedUntil, "never retired"))
		if k.Signs {
			fmt.Fprintf(w, "    signs      from %-20s  until %s\n", when(k.SignsFrom, "the start"), when(k.SignsUntil, "no end"))
		} else {
			fmt.Fprintln(w, "    signs      never")
		}
	}
}
