package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeModule writes a module "example.com/m" with one package, p, whose
// source is src, and returns its folder.
func writeModule(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":               "module example.com/m\n\ngo 1.25.0\n",
		"p/p.go":               src,
		"internal/i/i.go":      "package i\n\nfunc Hidden() {}\n",
		"cmd/tool/main.go":     "package main\n\nfunc Exported() {}\n\nfunc main() {}\n",
		"p/p_test.go":          "package p\n\nfunc TestOnly() {}\n",
		"p/external_p_test.go": "package p_test\n\nfunc Outside() {}\n",
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const v1 = `package p

import "net/http"

const Realm = "idsauth"

type Config struct {
	Name    string
	Client  *http.Client
	private int
}

func (c *Config) Run() error { return nil }

type Source interface {
	Keys(kid string) ([]byte, error)
}

func New(c Config) (*Config, error) { return &c, nil }

var ErrNo = http.ErrNoCookie

func unexported() {}
`

func TestListsTheExportedAPIOnly(t *testing.T) {
	lines, err := listAPI(writeModule(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`pkg example.com/m/p, const Realm untyped string = "idsauth"`,
		`pkg example.com/m/p, func New(c Config) (*Config, error)`,
		`pkg example.com/m/p, method (*Config) Run() error`,
		`pkg example.com/m/p, type Config struct`,
		`pkg example.com/m/p, type Config struct, Client *net/http.Client`,
		`pkg example.com/m/p, type Config struct, Name string`,
		`pkg example.com/m/p, type Source interface`,
		`pkg example.com/m/p, type Source interface, Keys(kid string) ([]byte, error)`,
		`pkg example.com/m/p, var ErrNo error`,
	}
	if !slices.Equal(lines, want) {
		t.Errorf("listAPI:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestChangesAreClassified(t *testing.T) {
	old, err := listAPI(writeModule(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	v2 := strings.NewReplacer(
		`const Realm = "idsauth"`, `const Realm = "other"`, // a changed value
		"\tName    string\n", "\tName    string\n\tAdded   bool\n", // a field added
		"\tKeys(kid string) ([]byte, error)\n", "\tKeys(kid string) ([]byte, error)\n\tClose() error\n", // a method added to an interface
		"var ErrNo = http.ErrNoCookie\n", "", // removed
	).Replace(v1) + "\nfunc Extra() {}\n"
	now, err := listAPI(writeModule(t, v2))
	if err != nil {
		t.Fatal(err)
	}
	d := diff(old, now)
	wantIncompatible := []string{
		`pkg example.com/m/p, const Realm untyped string = "idsauth"`,
		`pkg example.com/m/p, var ErrNo error`,
		`pkg example.com/m/p, type Source interface, Close() error`,
	}
	wantCompatible := []string{
		`pkg example.com/m/p, const Realm untyped string = "other"`,
		`pkg example.com/m/p, func Extra()`,
		`pkg example.com/m/p, type Config struct, Added bool`,
	}
	slices.Sort(d.incompatible)
	slices.Sort(d.compatible)
	slices.Sort(wantIncompatible)
	slices.Sort(wantCompatible)
	if !slices.Equal(d.incompatible, wantIncompatible) {
		t.Errorf("incompatible:\n%s\nwant:\n%s", strings.Join(d.incompatible, "\n"), strings.Join(wantIncompatible, "\n"))
	}
	if !slices.Equal(d.compatible, wantCompatible) {
		t.Errorf("compatible:\n%s\nwant:\n%s", strings.Join(d.compatible, "\n"), strings.Join(wantCompatible, "\n"))
	}

	if p := d.changelogProblems(""); len(p) != 4 { // empty, and three names
		t.Errorf("an empty Unreleased section: %d problems, want 4: %q", len(p), p)
	}
	partial := "\n### Removed\n- p.ErrNo (incompatible)\n"
	if p := d.changelogProblems(partial); len(p) != 2 {
		t.Errorf("a section naming one of three: %d problems, want 2: %q", len(p), p)
	}
	full := "\n### Changed\n- p.Realm is \"other\"; p.Source gains Close (incompatible)\n### Removed\n- p.ErrNo\n"
	if p := d.changelogProblems(full); len(p) != 0 {
		t.Errorf("a section naming every incompatible change: %q", p)
	}
	if p := (changes{compatible: []string{"x"}}).changelogProblems(""); len(p) != 1 {
		t.Errorf("a compatible change with no entry: %q, want one problem", p)
	}
}

func TestIdentifier(t *testing.T) {
	for line, want := range map[string]string{
		"pkg github.com/idsauth/idsauth/middleware, const DefaultRealm untyped string = \"idsauth\"":           "middleware.DefaultRealm",
		"pkg github.com/idsauth/idsauth/client, method (*Config) Client(ctx context.Context) *net/http.Client": "client.Config.Client",
		"pkg github.com/idsauth/idsauth/client, type Config struct, Key crypto.Signer":                         "client.Config",
		"pkg github.com/idsauth/idsauth/issuer, func New(cfg *Config, opts ...Option) (*Issuer, error)":        "issuer.New",
	} {
		if got := identifier(line); got != want {
			t.Errorf("identifier(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestUnreleasedSection(t *testing.T) {
	cl := "# Changelog\n\n## [Unreleased]\n\n### Added\n- x.Y\n\n## [0.1.0] - 2026-11-24\n\n- first\n"
	if got := unreleasedSection(cl); !strings.Contains(got, "x.Y") || strings.Contains(got, "first") {
		t.Errorf("unreleasedSection = %q", got)
	}
	if got := unreleasedSection("# Changelog\n"); got != "" {
		t.Errorf("no Unreleased heading: %q", got)
	}
}

// TestCheckAgainstTheLastRelease runs the check as CI does, in a git
// repository with a release tag: an API change fails until the snapshot
// is written, and then until the CHANGELOG names it.
func TestCheckAgainstTheLastRelease(t *testing.T) {
	dir := writeModule(t, v1)
	mods := []module{{dir: ".", snapshot: "api/m.txt", tagPrefix: "v"}}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := run(dir, true, mods); err != nil {
		t.Fatal(err)
	}
	writeChangelog(t, dir, "")
	git("add", "-A")
	git("commit", "-qm", "v0.1.0")
	git("tag", "v0.1.0")
	if err := run(dir, false, mods); err != nil {
		t.Fatalf("the released API, unchanged: %v", err)
	}

	// Remove ErrNo: the snapshot no longer matches.
	if err := os.WriteFile(filepath.Join(dir, "p/p.go"), []byte(strings.Replace(v1, "var ErrNo = http.ErrNoCookie\n", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, false, mods); err == nil || !strings.Contains(err.Error(), "not the snapshot's") {
		t.Fatalf("an API change without the snapshot: %v", err)
	}
	if err := run(dir, true, mods); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, false, mods); err == nil || !strings.Contains(err.Error(), "p.ErrNo is not named") {
		t.Fatalf("an incompatible change without a CHANGELOG entry: %v", err)
	}
	writeChangelog(t, dir, "### Removed\n\n- p.ErrNo (incompatible).\n")
	if err := run(dir, false, mods); err != nil {
		t.Fatalf("snapshot and CHANGELOG both say it: %v", err)
	}
}

func writeChangelog(t *testing.T, dir, unreleased string) {
	t.Helper()
	cl := "# Changelog\n\n## [Unreleased]\n\n" + unreleased + "\n## [0.1.0] - 2026-11-24\n\n- First release.\n"
	if err := os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(cl), 0o644); err != nil {
		t.Fatal(err)
	}
}
