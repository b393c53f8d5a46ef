package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
)

func decode(ctx context.Context, e env, args []string) error {
	fs := flags(e, "decode", "[-issuer URL [-audience A]] [--] [TOKEN]",
		`Print a JWT's header and claims, without checking anything. With -issuer,
also verify it as the middleware would (keys from the issuer's discovery
document and JWKS) and say which check failed, in the middleware's words.
The token is the argument (after --, as a token may begin with "-"), or
else read from standard input.`)
	issuerURL := fs.String("issuer", "", "verify the token against this issuer")
	audience := fs.String("audience", "", `with -issuer, the audience to require ("aud"); empty: any`)
	timeout := fs.Duration("timeout", 30*time.Second, "give up fetching keys after this long")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("one token at most")
	}
	if *audience != "" && *issuerURL == "" {
		return usagef("-audience needs -issuer")
	}
	tok, err := tokenArg(e, fs.Arg(0))
	if err != nil {
		return err
	}
	if err := printDecoded(e.stdout, tok); err != nil {
		return err
	}
	if *issuerURL == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cfg := accesstoken.Config{Issuer: strings.TrimSuffix(*issuerURL, "/"), CacheSize: -1}
	if *audience != "" {
		cfg.Audience = []string{*audience}
	} else {
		cfg.AnyAudience = true
	}
	v, err := accesstoken.New(ctx, cfg)
	if err != nil {
		return err
	}
	claims, err := v.Validate(ctx, tok, accesstoken.Presentation{})
	if err != nil {
		return fmt.Errorf("invalid: %v", err)
	}
	fmt.Fprintf(e.stdout, "valid: issued to %s for %s, expires %s\n", claims.ClientID, claims.Scopes.String(), claims.ExpiresAt.UTC().Format(time.RFC3339))
	if *audience == "" {
		fmt.Fprintln(e.stdout, "(the audience was not checked: give -audience to check it)")
	}
	return nil
}

// tokenArg is the token given as the argument, or else (for "" or "-")
// the first line of standard input.
func tokenArg(e env, arg string) (string, error) {
	tok := arg
	if tok == "" || tok == "-" {
		line, err := bufio.NewReader(io.LimitReader(e.stdin, 1<<20)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		tok = strings.TrimSpace(line)
	}
	if tok == "" {
		return "", usagef("no token: give it as the argument or on standard input")
	}
	return tok, nil
}

// printDecoded prints a JWT's header and claims as indented JSON. It
// checks nothing.
func printDecoded(w io.Writer, tok string) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return fmt.Errorf("not a JWT: %d parts, want 3", len(parts))
	}
	for i, name := range []string{"header", "claims"} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return fmt.Errorf("not a JWT: the %s is not base64url", name)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, raw, "", "  "); err != nil {
			return fmt.Errorf("not a JWT: the %s is not JSON", name)
		}
		fmt.Fprintf(w, "%s: %s\n", name, out.String())
	}
	return nil
}
