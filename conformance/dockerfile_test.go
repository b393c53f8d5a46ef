package conformance

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// buildLine is the Dockerfile's build command: RUN <env> go build ... -o OUT PKG.
var buildLine = regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build -C \S+ .*) -o (\S+) (\S+)$`)

// TestDockerfileBuildsAStaticBinary runs the Dockerfile's own build
// command and reads the binary's ELF headers: no interpreter and no
// shared library, so it runs in an image FROM scratch.
func TestDockerfileBuildsAStaticBinary(t *testing.T) {
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := buildLine.FindSubmatch(df)
	if m == nil {
		t.Fatalf("the Dockerfile has no line matching %s", buildLine)
	}
	out := filepath.Join(t.TempDir(), "idsauth")
	cmd := exec.Command("sh", "-c", string(m[1])+" -o "+out+" "+string(m[3]))
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is dynamically linked", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}
	if !strings.Contains(string(m[1]), "-trimpath") {
		t.Errorf("the build command %q does not trim paths: the binary would carry the builder's folders", m[1])
	}
	// And it runs.
	if b, err := exec.Command(out, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(b), "idsauth ") {
		t.Errorf("idsauth version: %v\n%s", err, b)
	}
}

// TestDockerfileNamesImagesFully: every FROM names its image with its
// registry (docker.io/library/golang, not golang), since podman refuses a
// short name by default; "scratch" is no image, and a stage may start
// from an earlier one by its name.
func TestDockerfileNamesImagesFully(t *testing.T) {
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]bool{}
	froms := regexp.MustCompile(`(?mi)^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?`).FindAllStringSubmatch(string(df), -1)
	if len(froms) == 0 {
		t.Fatal("the Dockerfile has no FROM")
	}
	for _, m := range froms {
		image, stage := m[1], m[2]
		host, _, hasPath := strings.Cut(image, "/")
		full := hasPath && (strings.ContainsAny(host, ".:") || host == "localhost")
		if !full && image != "scratch" && !stages[image] {
			t.Errorf("FROM %s: a short name; name the registry, such as docker.io/library/%s", image, image)
		}
		if stage != "" {
			stages[stage] = true
		}
	}
}
