package releasetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// TestPublishedModulesInstall publishes the modules at the version
// of CHANGELOG.md's newest release into a file-based module proxy, then, in
// a fresh module outside the repository, with no replace directive, gets
// each of them, builds and runs a program that imports middleware, issuer,
// client, redisstore, pgregistry, idsauthotel, grpcauth and connectauth
// (testdata/consumer), and installs and
// runs the idsauth command at that version, as the README tells users to.
//
// It fails when a published go.mod requires a version of another that is
// not being published (redisstore requiring the root at v0.0.0, say),
// when a package sits in two modules, when a dependency needs a newer Go
// than the root go.mod's go line, or when a tracked file would be left
// out of a zip. The modules' dependencies come from the module proxy
// (GOPROXY), checked against the checksum database as a user's are.
func TestPublishedModulesInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads the modules' dependencies and builds them; run without -short")
	}
	repo := strings.TrimSpace(run(t, ".", nil, "git", "rev-parse", "--show-toplevel"))
	version := releaseVersion(t, repo)
	minGo := goLine(t, filepath.Join(repo, "go.mod"))
	t.Logf("publishing %s; the root go.mod says go %s", version, minGo)

	proxy := t.TempDir()
	at := time.Now()
	for _, m := range Published {
		omitted, err := Publish(proxy, repo, m, version, at)
		if err != nil {
			t.Fatalf("publishing %s: %v", m.Path, err)
		}
		// The go command leaves a nested module's files out of the zip,
		// and its go.mod with them; anything else left out (a symbolic
		// link, a vendor directory) is a file users would not get.
		var nested []string
		for _, f := range omitted {
			if dir, base := path.Split(f.Path); base == "go.mod" && dir != "" {
				nested = append(nested, dir)
			}
		}
		for _, f := range omitted {
			if !underAny(f.Path, nested) {
				t.Errorf("%s: %s is tracked by git but left out of the module zip: %v", m.Path, f.Path, f.Err)
			}
		}
		t.Logf("%s@%s: %s, %d nested modules left out", m.Path, version, zipSize(t, proxy, m.Path, version), len(nested))
	}

	env := consumerEnv(t, proxy)
	if got := strings.TrimSpace(run(t, ".", env, "go", "env", "GOVERSION")); got != runtime.Version() {
		t.Fatalf("the go command on PATH is %s, this test runs on %s", got, runtime.Version())
	}

	// Each module alone, in a module of its own: a version another one
	// requires is then not already in the graph to hide a missing one.
	for _, m := range Published {
		t.Run("go get "+m.Path, func(t *testing.T) {
			goLine := minGo
			if m.NewerGo {
				goLine = moduleGoLine(t, repo, m)
			}
			work := newModule(t, env, goLine)
			run(t, work, env, "go", "get", m.Path+"@"+version)
			checkRequires(t, work, goLine, version, []Module{m})
		})
	}

	t.Run("a module that imports mcpauth builds", func(t *testing.T) {
		m := Published[slices.IndexFunc(Published, func(m Module) bool { return m.Dir == "mcpauth" })]
		goLine := moduleGoLine(t, repo, m)
		work := newModule(t, env, goLine)
		src, err := os.ReadFile(filepath.Join("testdata", "mcpconsumer", "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "main.go"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, work, env, "go", "get", m.Path+"@"+version, Published[0].Path+"@"+version)
		run(t, work, env, "go", "mod", "tidy")
		checkRequires(t, work, goLine, version, []Module{Published[0], m})
		bin := filepath.Join(work, "mcpconsumer"+exe())
		run(t, work, env, "go", "vet", ".")
		run(t, work, env, "go", "build", "-o", bin, ".")
		if got, want := run(t, work, nil, bin), "mcp without a token: 401\nmcp with the client's token: \"whoami: reporting\"\n"; got != want {
			t.Errorf("the MCP consumer printed:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("a module that imports them builds", func(t *testing.T) {
		work := newModule(t, env, minGo)
		src, err := os.ReadFile(filepath.Join("testdata", "consumer", "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "main.go"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, m := range Libraries() {
			run(t, work, env, "go", "get", m.Path+"@"+version)
		}
		run(t, work, env, "go", "mod", "tidy")
		checkRequires(t, work, minGo, version, Libraries())

		bin := filepath.Join(work, "consumer"+exe())
		run(t, work, env, "go", "vet", ".")
		run(t, work, env, "go", "build", "-o", bin, ".")
		got := run(t, work, nil, bin)
		want := `without a token: 401, challenge "Bearer"
with client's token: 200, "the users of demo"
metric idsauth.tokens.issued: 1
metric idsauth.validations: 1
metric idsauth.rejections: 1
spans idsauth.token: 1
spans idsauth.validate: 1
redisstore without Redis: decided in memory: true
pgregistry without PostgreSQL: loaded false, up false
grpc without a token: Unauthenticated "no bearer token"
grpc with client's token: "reporting"
connect without a token: unauthenticated "no bearer token"
connect with client's token: "reporting"
`
		if got != want {
			t.Errorf("the consumer printed:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("go install of the command", func(t *testing.T) {
		// Outside any module, as the README's go install is run.
		dir := t.TempDir()
		cmdPath := Published[0].Path + "/cmd/idsauth"
		run(t, dir, env, "go", "install", cmdPath+"@"+version)
		bin := filepath.Join(envValue(env, "GOBIN"), "idsauth"+exe())

		// The command is a module of its own, built on the library,
		// redisstore and pgregistry of the same release.
		info := run(t, dir, env, "go", "version", "-m", bin)
		for _, want := range []string{"\tmod\t" + cmdPath + "\t" + version + "\t", "\tdep\t" + Published[0].Path + "\t" + version + "\t",
			"\tdep\t" + Published[1].Path + "\t" + version + "\t", "\tdep\t" + Published[2].Path + "\t" + version + "\t"} {
			if !strings.Contains(info, want) {
				t.Errorf("go version -m %s does not hold %q:\n%s", bin, strings.TrimSpace(want), info)
			}
		}
		if v := run(t, dir, nil, bin, "version"); !strings.Contains(v, "idsauth "+version) {
			t.Errorf("idsauth version printed %q, want the version %s", v, version)
		}
		if usage := runStderr(t, dir, bin, "-h"); !strings.Contains(usage, "check-config") {
			t.Errorf("idsauth -h printed no command list:\n%s", usage)
		}
		kid := field(t, run(t, dir, nil, bin, "gen-key", "-alg", "ES256", "-out", "key.pem"), "kid:")
		hash := field(t, run(t, dir, nil, bin, "hash-secret"), "hash:")
		cfg := fmt.Sprintf(`{"issuer": "https://host.example/ids", "keys": [{"file": "key.pem"}],
			"clients": [{"clientId": "reporting", "secretHashes": [%q], "scopes": ["pd_AdminWebApi"]}]}`, hash)
		if err := os.WriteFile(filepath.Join(dir, "idsauth.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := run(t, dir, nil, bin, "check-config", "idsauth.json"); !strings.Contains(out, kid) || !strings.Contains(out, "reporting") {
			t.Errorf("check-config does not show the key %s and the client:\n%s", kid, out)
		}
	})
}

// newModule makes a module in a new directory, outside the repository,
// whose go line is minGo: a user on the oldest Go idsauth supports. go get
// raises that line when a dependency needs a newer Go.
func newModule(t *testing.T, env []string, minGo string) string {
	work := t.TempDir()
	run(t, work, env, "go", "mod", "init", "example.com/consumer")
	run(t, work, env, "go", "mod", "edit", "-go="+minGo)
	return work
}

// checkRequires checks that the module in work still says go minGo, and
// requires each of mods at version.
func checkRequires(t *testing.T, work, minGo, version string, mods []Module) {
	t.Helper()
	f := parseGoMod(t, filepath.Join(work, "go.mod"))
	if f.Go.Version != minGo {
		t.Errorf("the go line became %s: a dependency needs a newer Go than idsauth's go.mod says (%s)", f.Go.Version, minGo)
	}
	for _, m := range mods {
		if got := requiredVersion(f, m.Path); got != version {
			t.Errorf("requires %s %q, want %s", m.Path, got, version)
		}
	}
}

// consumerEnv is the environment of a user's go command: the modules
// under test come from proxy, everything else from the host's module cache
// or its GOPROXY; the module cache, GOBIN and go.mod are new.
func consumerEnv(t *testing.T, proxy string) []string {
	home := t.TempDir()
	hostProxy := strings.TrimSpace(run(t, ".", nil, "go", "env", "GOPROXY"))
	hostCache := strings.TrimSpace(run(t, ".", nil, "go", "env", "GOMODCACHE"))
	return append(os.Environ(),
		// Ours first: the go command asks the next only on a 404 or 410.
		// The host's module cache is a proxy too ("go help goproxy"),
		// which spares the network what it already holds.
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(hostCache, "cache", "download"))+","+hostProxy,
		// The checksum database has never seen these zips; every other
		// module is checked against it.
		"GONOSUMDB=github.com/idsauth",
		"GOPRIVATE=", "GONOPROXY=", "GOFLAGS=-mod=mod -modcacherw",
		// A fresh module cache, so that no earlier run's v0.x.y is taken
		// instead of this one (-modcacherw lets the test remove it).
		"GOMODCACHE="+filepath.Join(home, "modcache"),
		"GOBIN="+filepath.Join(home, "bin"),
		"GOWORK=off", "GOTOOLCHAIN=local", "GO111MODULE=on",
	)
}

// zipSize says how large the zip of path@version in proxy is, against
// the go command's limit (Publish has checked it).
func zipSize(t *testing.T, proxy, path, version string) string {
	escaped, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(proxy, filepath.FromSlash(escaped), "@v", version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("zip %d KiB (the limit: %d MiB)", fi.Size()>>10, zip.MaxZipFile>>20)
}

// releaseVersion is the newest release in CHANGELOG.md, "v" prefixed.
func releaseVersion(t *testing.T, repo string) string {
	v, err := ReleaseVersion(repo)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func parseGoMod(t *testing.T, name string) *modfile.File {
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(name, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// moduleGoLine is the go line of m's go.mod in repo.
func moduleGoLine(t *testing.T, repo string, m Module) string {
	return goLine(t, filepath.Join(repo, filepath.FromSlash(m.Dir), "go.mod"))
}

func goLine(t *testing.T, name string) string {
	f := parseGoMod(t, name)
	if f.Go == nil {
		t.Fatalf("%s has no go line", name)
	}
	return f.Go.Version
}

func requiredVersion(f *modfile.File, path string) string {
	for _, r := range f.Require {
		if r.Mod.Path == path {
			return r.Mod.Version
		}
	}
	return ""
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// field returns what follows label on a line of out.
func field(t *testing.T, out, label string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, label); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %q line in:\n%s", label, out)
	return ""
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val // the last one wins, as in exec.Cmd
		}
	}
	return v
}

func exe() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// run runs name in dir with env (nil: the test's own) and returns its
// standard output; it fails the test, with both outputs, if name fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	stdout, _ := runCmd(t, dir, env, name, args...)
	return stdout
}

// runStderr is run for a command that writes to standard error.
func runStderr(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	_, stderr := runCmd(t, dir, nil, name, args...)
	return stderr
}

func runCmd(t *testing.T, dir string, env []string, name string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s%s", name, strings.Join(args, " "), dir, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String(), stderr.String()
}
