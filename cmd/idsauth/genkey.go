package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/idsauth/idsauth/internal/keys"
)

func genKey(_ context.Context, e env, args []string) error {
	f := flags(e, "gen-key", "-alg ES256|RS256|EdDSA -out FILE",
		`Make a signing key for the issuer's "keys" list: a PKCS #8 PEM private key,
written with mode 0600 to a file that must not exist yet. Prints the key's
kid, the RFC 7638 thumbprint the issuer publishes it under.`)
	alg := f.String("alg", "ES256", "ES256 (P-256), RS256 (RSA 2048) or EdDSA (Ed25519)")
	out := f.String("out", "", "the file to write (required)")
	if err := parse(f, args); err != nil {
		return err
	}
	switch {
	case f.NArg() > 0:
		return usagef("unexpected argument %q", f.Arg(0))
	case *out == "":
		return usagef("-out FILE is required")
	}
	switch *alg {
	case "ES256", "RS256", "EdDSA":
	default:
		return usagef("-alg %q: want ES256, RS256 or EdDSA", *alg)
	}
	k, err := keys.Generate(*alg)
	if err != nil {
		return err
	}
	pemBytes, err := keys.EncodePEM(k.Private)
	if err != nil {
		return err
	}
	file, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists: a key is never overwritten; choose another file or remove it first", *out)
	}
	if err != nil {
		return err
	}
	if _, err := file.Write(pemBytes); err != nil {
		file.Close()
		os.Remove(*out)
		return err
	}
	if err := file.Close(); err != nil {
		os.Remove(*out)
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s (%s)\nkid: %s\n", *out, k.Alg, k.KID)
	return nil
}
