package observe_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRootModuleHasNoTelemetryDependency: watching idsauth costs no
// dependency; OpenTelemetry lives in the idsauthotel module only (issue 15).
func TestRootModuleHasNoTelemetryDependency(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	cmd := exec.Command(goTool, "list", "-m", "all")
	cmd.Dir = ".." // the root module
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	mods := strings.Fields(string(out))
	if len(mods) < 5 || mods[0] != "github.com/idsauth/idsauth" {
		t.Fatalf("go list -m all gave an implausible list: %q", mods)
	}
	for _, m := range mods {
		if strings.Contains(m, "opentelemetry") {
			t.Errorf("the root module depends on %s", m)
		}
	}
}
