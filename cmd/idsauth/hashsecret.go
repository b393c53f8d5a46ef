package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/idsauth/idsauth/secret"
)

// Bcrypt costs hash-secret accepts. Below 4 the bcrypt package would
// silently use 10; above 16 one check takes seconds, on every failed
// attempt the issuer verifies.
const (
	minBcryptCost = 4
	maxBcryptCost = 16
)

// shortSecret is the length under which a secret given a fast hash gets a
// warning: Generate's secrets are 43 characters (256 bits).
const shortSecret = 32

func hashSecret(_ context.Context, e env, args []string) error {
	fs := flags(e, "hash-secret", "[-stdin] [-bcrypt COST]",
		`Without -stdin, make a random 256-bit secret and print it with its sha256
hash: give the secret to the client once, put the hash in the configuration.
With -stdin, hash a secret you already have instead: typed at the terminal
(without echo) or piped on standard input (one line). A secret is never
taken from the command line.`)
	fromStdin := fs.Bool("stdin", false, "hash a secret read from the terminal or standard input instead of making one")
	cost := fs.Int("bcrypt", 0, fmt.Sprintf("make a bcrypt hash of this cost (%d to %d) instead of sha256: for a secret a person chose", minBcryptCost, maxBcryptCost))
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument: a secret on the command line ends up in shell history; use -stdin")
	}
	if *cost != 0 && (*cost < minBcryptCost || *cost > maxBcryptCost) {
		return usagef("-bcrypt %d: the cost must be from %d to %d", *cost, minBcryptCost, maxBcryptCost)
	}
	plain := ""
	if *fromStdin {
		var err error
		if plain, err = readSecret(e, "Secret: "); err != nil {
			return err
		}
		if *cost == 0 && utf8.RuneCountInString(plain) < shortSecret {
			fmt.Fprintf(e.stderr, "warning: this secret is %d characters; a fast hash suits only long random secrets (run 'idsauth hash-secret' for one). For a secret a person chose, use -bcrypt 12.\n", utf8.RuneCountInString(plain))
		}
	} else {
		plain, _ = secret.Generate()
	}
	hash := secret.HashSHA256(plain)
	if *cost != 0 {
		var err error
		if hash, err = secret.HashBcrypt(plain, *cost); err != nil {
			return err
		}
	}
	if !*fromStdin {
		fmt.Fprintf(e.stdout, "secret: %s\n", plain)
	}
	fmt.Fprintf(e.stdout, "hash:   %s\n", hash)
	return nil
}

// readSecret reads a secret from the terminal without echo, or else one
// line of standard input.
func readSecret(e env, prompt string) (string, error) {
	line, ok, err := e.terminal(prompt)
	if err != nil {
		return "", err
	}
	if !ok {
		line, err = bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no secret given")
	}
	return line, nil
}
