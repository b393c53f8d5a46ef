package grpcauth_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGuideProgramsBuild builds every whole program of docs/GRPC.md that
// imports this module, against this module, as the root's
// TestREADMECodeCompiles builds the other guides' programs: the guide's
// code cannot rot.
func TestGuideProgramsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the guide's programs with the go command: run without -short")
	}
	guide, err := os.ReadFile(filepath.Join("..", "docs", "GRPC.md"))
	if err != nil {
		t.Fatal(err)
	}
	built := 0
	for i, b := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(guide, -1) {
		code := string(b[1])
		if !strings.HasPrefix(code, "package main\n") || !strings.Contains(code, `"github.com/idsauth/idsauth/grpcauth"`) {
			continue
		}
		dir := t.TempDir()
		file := filepath.Join(dir, "main.go")
		if err := os.WriteFile(file, []byte(code), 0o600); err != nil {
			t.Fatal(err)
		}
		// The file lies outside the module; run from its root, the go
		// command resolves its imports against this module.
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "prog"), file)
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("docs/GRPC.md Go block %d: go build: %v\n%s", i+1, err, out)
		}
		built++
	}
	if built != 2 {
		t.Errorf("built %d programs of docs/GRPC.md that import grpcauth, want 2 (a server and a client)", built)
	}
}
