package main

import (
	"strings"
	"testing"

	"github.com/idsauth/idsauth/secret"
)

func TestHashSecret(t *testing.T) {
	t.Run("new secret", func(t *testing.T) {
		var out strings.Builder
		if err := hashSecret(nil, strings.NewReader(""), &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "secret: ") || !strings.HasPrefix(lines[1], "hash:   sha256:") {
			t.Fatalf("output %q", out.String())
		}
		plain := strings.TrimPrefix(lines[0], "secret: ")
		if !secret.MustParse(strings.TrimPrefix(lines[1], "hash:   ")).Verify(plain) {
			t.Fatal("hash does not match the secret")
		}
	})
	t.Run("from stdin, bcrypt", func(t *testing.T) {
		var out strings.Builder
		if err := hashSecret([]string{"-stdin", "-bcrypt", "4"}, strings.NewReader("my passphrase\n"), &out); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "my passphrase") {
			t.Fatal("the secret read from stdin is printed back")
		}
		h := strings.TrimSpace(strings.TrimPrefix(out.String(), "hash:"))
		if !secret.MustParse(h).Verify("my passphrase") {
			t.Fatalf("hash %q does not match", h)
		}
	})
	t.Run("empty stdin", func(t *testing.T) {
		if err := hashSecret([]string{"-stdin"}, strings.NewReader(""), &strings.Builder{}); err == nil {
			t.Fatal("no error")
		}
	})
}
