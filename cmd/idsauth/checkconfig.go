package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
)

func checkConfig(_ context.Context, e env, args []string) error {
	fs := flags(e, "check-config", "FILE",
		`Load an issuer configuration file exactly as the issuer does (every field
checked, key files read) and print what it holds: clients with their scopes,
audiences and token lifetimes, and the keys with their kids, the signing one
first. A file may also hold SCIM tenants ("scimTenants", as the example
service's does); they are checked too. A bad file exits 1 with the error
naming the field. Run it before sending the issuer SIGHUP.`)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("give exactly one configuration file")
	}
	data, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	var file struct {
		issuer.Config
		SCIMTenants []middleware.TenantConfig `json:"scimTenants,omitempty"`
	}
	if err := issuer.DecodeConfig(data, &file); err != nil {
		return err
	}
	tenants, err := middleware.ParseTenants(file.SCIMTenants)
	if err != nil {
		return err // "SCIM tenants: [1].tenant: ..."
	}
	cfg := &file.Config
	cfg.Dir = filepath.Dir(fs.Arg(0))
	iss, err := issuer.New(cfg)
	if err != nil {
		return err
	}
	w := e.stdout
	fmt.Fprintf(w, "%s: ok\n\nissuer  %s\ntoken   %s\njwks    %s\n\nkeys (the first signs):\n", fs.Arg(0), iss.URL(), iss.TokenURL(), iss.JWKSURL())
	for i, kid := range iss.KeyIDs() {
		role := "published"
		if i == 0 {
			role = "signs"
		}
		fmt.Fprintf(w, "  %-9s %s\n", role, kid)
	}
	fmt.Fprintln(w, "\nclients:")
	clients := slices.Clone(cfg.Clients)
	slices.SortFunc(clients, func(a, b issuer.ClientConfig) int { return strings.Compare(a.ClientID, b.ClientID) })
	for _, c := range clients {
		lifetime := c.AccessTokenLifetime
		if lifetime == 0 {
			lifetime = 3600
		}
		aud := strings.Join(c.Audience, " ")
		if aud == "" {
			aud = iss.URL() + "/resources (default)"
		}
		fmt.Fprintf(w, "  %s\n    scopes    %s\n    audience  %s\n    lifetime  %ds\n    secrets   %d hash(es)\n",
			c.ClientID, strings.Join(c.Scopes, " "), aud, lifetime, len(c.SecretHashes))
		if len(c.PublicKeys) > 0 {
			fmt.Fprintf(w, "    keys      %d public key(s), private_key_jwt\n", len(c.PublicKeys))
		}
	}
	if len(tenants) > 0 {
		fmt.Fprintln(w, "\nSCIM tenants:")
		names := slices.Sorted(maps.Keys(tenants))
		for _, name := range names {
			fmt.Fprintf(w, "  %-20s %d token hash(es)\n", name, len(tenants[name]))
		}
	}
	return nil
}
