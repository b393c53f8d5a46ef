package issuer_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/idsauth/idsauth/issuer"
)

// TestKeyFileErrorKeepsItsCause: a key file that cannot be read is a
// *ConfigError naming the field, and errors.Is still finds the cause (a
// missing file here; a permission denied alike), so that a program can
// say what to do about it.
func TestKeyFileErrorKeepsItsCause(t *testing.T) {
	cfg := testConfig("https://host.example/ids")
	cfg.EphemeralKey = false
	cfg.Keys = []issuer.KeyConfig{{File: filepath.Join(t.TempDir(), "missing.pem")}}
	_, err := issuer.New(cfg)
	var ce *issuer.ConfigError
	if !errors.As(err, &ce) || ce.Field != "keys[0]" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want a ConfigError of keys[0] wrapping fs.ErrNotExist", err)
	}
}

// TestLimitsErrorIsAlwaysTheFirst: of several bad limits, the error names
// the first in the order of the fields, every time (a map's order chose
// one at random).
func TestLimitsErrorIsAlwaysTheFirst(t *testing.T) {
	for range 50 {
		cfg := testConfig("https://host.example/ids")
		cfg.Limits.FailedAttemptsPerAddress = -1
		cfg.Limits.LimiterMaxBytes = -1
		cfg.Limits.MaxConcurrentSlowHashes = -1
		var ce *issuer.ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != "limits.failedAttemptsPerAddress" {
			t.Fatalf("got %v, want limits.failedAttemptsPerAddress", err)
		}
	}
}
