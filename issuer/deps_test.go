package issuer_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestIssuerDoesNotImportMiddleware: the producer of tokens does not
// import their consumer, nor the JWKS libraries the consumer fetches
// keys with (issue 13, item 1).
func TestIssuerDoesNotImportMiddleware(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/idsauth/idsauth/issuer").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !strings.Contains(string(out), "github.com/idsauth/idsauth/internal/keyerr") {
		t.Fatalf("go list -deps gave an implausible list: %q", deps)
	}
	for _, d := range deps {
		if strings.Contains(d, "middleware") || strings.Contains(d, "keyfunc") || strings.Contains(d, "jwkset") {
			t.Errorf("issuer depends on %s", d)
		}
	}
}
