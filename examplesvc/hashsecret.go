package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/idsauth/idsauth/secret"
)

// hashSecret prints a new random secret and its hash. With -stdin it
// hashes the secret read from standard input instead (one line), so the
// secret never appears in a command line or the shell history.
func hashSecret(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("hash-secret", flag.ContinueOnError)
	fromStdin := fs.Bool("stdin", false, "hash the secret read from standard input instead of making one")
	bcryptCost := fs.Int("bcrypt", 0, "make a bcrypt hash of this cost (for low-entropy secrets) instead of sha256")
	if err := fs.Parse(args); err != nil {
		return err
	}
	plain, hash := "", ""
	if *fromStdin {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		plain = strings.TrimRight(line, "\r\n")
		if plain == "" {
			return errors.New("no secret on standard input")
		}
	} else {
		plain, _ = secret.Generate()
	}
	if *bcryptCost > 0 {
		var err error
		if hash, err = secret.HashBcrypt(plain, *bcryptCost); err != nil {
			return err
		}
	} else {
		hash = secret.HashSHA256(plain)
	}
	if !*fromStdin {
		fmt.Fprintf(stdout, "secret: %s\n", plain)
	}
	fmt.Fprintf(stdout, "hash:   %s\n", hash)
	return nil
}
