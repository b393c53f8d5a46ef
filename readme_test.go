package idsauth_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlock finds the Go code blocks of a Markdown file.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestREADMECodeCompiles builds every Go block of the README and of
// docs/GETTING-STARTED.md (the programs the README sends a newcomer to)
// against this module, so that their code cannot rot: each block is a
// whole file, a program (package main) that is built, or a test file
// (package *_test) that is run as a test. The other guides' whole files
// are built too.
func TestREADMECodeCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the README's programs with the go command: run without -short")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	buildBlocks(t, goCmd, "README", goBlock.FindAllSubmatch(readme, -1), true)
	const start = "docs/GETTING-STARTED.md"
	first, err := os.ReadFile(start)
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatch(first, -1)
	if len(blocks) < 4 {
		t.Fatalf("%s has %d Go blocks, want at least 4 (protect a route, run the issuer, call the API, test a handler)", start, len(blocks))
	}
	buildBlocks(t, goCmd, start, blocks, true)
	// The other guides' whole files (with a package clause) are built too;
	// their fragments, which show a setting in a few lines, are not.
	guides, _ := filepath.Glob("docs/*.md")
	for _, g := range guides {
		if g == start {
			continue
		}
		text, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		buildBlocks(t, goCmd, g, goBlock.FindAllSubmatch(text, -1), false)
	}
}

// otherModules are the modules of this repository whose guide programs
// (docs/GRPC.md) import packages this module does not have: each builds
// its own (their guide_test.go).
var otherModules = regexp.MustCompile(`"github.com/idsauth/idsauth/(grpcauth|connectauth)["/]`)

// buildBlocks builds or runs each whole-file Go block of the document
// name; with whole, a block without a package clause is an error.
func buildBlocks(t *testing.T, goCmd, name string, blocks [][][]byte, whole bool) {
	t.Helper()
	for i, b := range blocks {
		code := string(b[1])
		if otherModules.MatchString(code) {
			continue
		}
		pkg := regexp.MustCompile(`(?m)^package (\w+)`).FindStringSubmatch(code)
		if pkg == nil {
			if whole {
				t.Errorf("%s Go block %d is not a whole file (no package clause):\n%s", name, i+1, code)
			}
			continue
		}
		dir := t.TempDir()
		var args []string
		switch {
		case pkg[1] == "main":
			file := filepath.Join(dir, "main.go")
			writeFile(t, file, code)
			args = []string{"build", "-o", filepath.Join(dir, "prog"), file}
		case strings.HasSuffix(pkg[1], "_test"):
			file := filepath.Join(dir, "readme_test.go")
			writeFile(t, file, code)
			args = []string{"test", "-count=1", file}
		default:
			t.Errorf("%s Go block %d is package %s: want main or a _test package", name, i+1, pkg[1])
			continue
		}
		// The files lie outside the module; run from its root, the go
		// command resolves their imports against this module.
		cmd := exec.Command(goCmd, args...)
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s Go block %d (package %s): go %s: %v\n%s", name, i+1, pkg[1], args[0], err, out)
		}
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
