package issuer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestEmptySecretHashIsRefusedAtLoad: a client registered with the hash
// of the empty secret (a hash built from an unset environment variable)
// is refused by New and Reload, naming the field, where it used to be
// issued tokens for "curl -u me:".
func TestEmptySecretHashIsRefusedAtLoad(t *testing.T) {
	cfg := &issuer.Config{
		Issuer:       "https://auth.example/ids",
		EphemeralKey: true,
		Clients: []issuer.ClientConfig{
			{ClientID: "ok", SecretHashes: []string{secret.HashSHA256("s3cret").String()}, Scopes: []string{scope.AdminWebAPI}},
			{ClientID: "me", SecretHashes: []string{secret.HashSHA256("x").String(), secret.HashSHA256("").String()}, Scopes: []string{scope.AdminWebAPI}},
		},
	}
	_, err := issuer.New(cfg)
	var ce *issuer.ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, secret.ErrEmptySecret) || !strings.Contains(err.Error(), `clients[1] ("me").secretHashes[1]`) {
		t.Fatalf("New: %v, want a ConfigError for clients[1] (\"me\").secretHashes[1] wrapping ErrEmptySecret", err)
	}
	cfg.Clients = cfg.Clients[:1]
	iss, err := issuer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clients = append(cfg.Clients, issuer.ClientConfig{ClientID: "me", SecretHashes: []string{secret.HashSHA256("").String()}, Scopes: []string{scope.AdminWebAPI}})
	if err := iss.Reload(cfg); !errors.Is(err, secret.ErrEmptySecret) {
		t.Fatalf("Reload: %v, want ErrEmptySecret", err)
	}
}
