package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
)

// apiSecretEnv is the environment variable introspect reads the API's
// secret from, when it is set and no other source is named.
const apiSecretEnv = "IDSAUTH_API_SECRET"

func introspect(ctx context.Context, e env, args []string) error {
	fs := flags(e, "introspect", "-issuer URL -api NAME [-endpoint URL] [--] [TOKEN]",
		`Ask the issuer's introspection endpoint (RFC 7662, found by its discovery
document unless -endpoint) about a token, reference or JWT, as the API
resource NAME, and print whether it is active and its claims, checked as
accesstoken's Introspection checks them. The API's secret is read from
-secret-file, else from the environment variable named by -secret-env (by
default `+apiSecretEnv+`, if set), else from the terminal without echo;
never from a flag. The token is the argument (after --, as a reference token
may begin with "-"), or else read from standard input. The exit status is 1
when the token is not active.`)
	issuerURL := fs.String("issuer", "", "the issuer URL, e.g. https://host/ids (required)")
	api := fs.String("api", "", "the API resource's name, its client ID at the endpoint (required)")
	endpoint := fs.String("endpoint", "", "the introspection endpoint (default: from discovery)")
	secretFile := fs.String("secret-file", "", "read the API's secret from the first line of this file")
	secretEnv := fs.String("secret-env", "", "read the API's secret from this environment variable")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 1:
		return usagef("one token at most")
	case *issuerURL == "" || *api == "":
		return usagef("-issuer and -api are required")
	}
	env := *secretEnv
	if env == "" && *secretFile == "" && e.getenv(apiSecretEnv) != "" {
		env = apiSecretEnv
	}
	sec, err := clientSecret(e, *secretFile, env)
	if err != nil {
		return err
	}
	tok, err := tokenArg(e, fs.Arg(0))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	in, err := accesstoken.New(ctx, accesstoken.Config{
		Issuer:      strings.TrimSuffix(*issuerURL, "/"),
		AnyAudience: true,
		// No Keys: anything the endpoint takes is introspected, JWTs too
		// (16 KiB at most, as a validator reads them), and bound tokens,
		// whose cnf is printed with the other claims.
		AllowBoundTokens: true,
		// Why a call failed (the endpoint's status: a wrong secret is its
		// 401), on standard error; never the token or the secret.
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Introspection: &accesstoken.Introspection{
			Endpoint:     *endpoint,
			ClientID:     *api,
			ClientSecret: sec,
			CacheBytes:   -1,
			Timeout:      *timeout,
		},
	})
	if err != nil {
		return err
	}
	claims, err := in.Validate(ctx, tok, accesstoken.Presentation{})
	if errors.Is(err, accesstoken.ErrInactive) {
		fmt.Fprintln(e.stdout, "inactive")
		return errInactive
	}
	if err != nil {
		return fmt.Errorf("not checked: %v", err)
	}
	raw, err := claims.Raw()
	if err != nil {
		return err
	}
	out, _ := json.MarshalIndent(raw, "", "  ")
	fmt.Fprintf(e.stdout, "active: issued to %s for %s, expires %s\n%s\n", claims.ClientID, claims.Scopes.String(), claims.ExpiresAt.UTC().Format(time.RFC3339), out)
	return nil
}

// errInactive ends introspect with status 1, the answer printed.
var errInactive = errors.New("the token is not active")
