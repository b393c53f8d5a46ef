// Package releasetest checks that idsauth's published modules install the
// way a user installs them: from a module proxy, at the release version,
// with no replace directive to lean on. Publish puts the modules, made from
// the repository's working tree, into a file-based module proxy
// (GOPROXY=file://dir); the test builds a program that imports them in a
// fresh module outside the repository, and installs the idsauth command.
//
// It is a module of its own so that golang.org/x/mod, which makes the
// zips, stays out of idsauth's go.mod. CI runs it with .ci/release.
package releasetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// A Module is a module published from this repository.
type Module struct {
	Path string // the module path, e.g. "github.com/idsauth/idsauth/redisstore"
	Dir  string // its directory in the repository, slash-separated; "" is the root
	// Command is set for a module of a command, which a program does not
	// import: it is installed, not required.
	Command bool
	// NewerGo is set for a module whose go line is newer than the root's
	// (mcpauth: the MCP SDKs need go 1.25.5): a program that imports it
	// says so too, and it is left out of the program that imports the
	// others at the root's go line.
	NewerGo bool
}

// Libraries are the Published modules a program at the root's go line
// imports.
func Libraries() []Module {
	var out []Module
	for _, m := range Published {
		if !m.Command && !m.NewerGo {
			out = append(out, m)
		}
	}
	return out
}

// Published are the modules a release tags, the root first: the others
// require it at the release version, so its tag must exist before theirs
// resolve (RELEASING.md).
var Published = []Module{
	{Path: "github.com/idsauth/idsauth", Dir: ""},
	{Path: "github.com/idsauth/idsauth/redisstore", Dir: "redisstore"},
	{Path: "github.com/idsauth/idsauth/pgregistry", Dir: "pgregistry"},
	{Path: "github.com/idsauth/idsauth/idsauthotel", Dir: "idsauthotel"},
	{Path: "github.com/idsauth/idsauth/grpcauth", Dir: "grpcauth"},
	{Path: "github.com/idsauth/idsauth/connectauth", Dir: "connectauth"},
	{Path: "github.com/idsauth/idsauth/mcpauth", Dir: "mcpauth", NewerGo: true},
	// The command requires the root, redisstore and pgregistry: its tag
	// comes last.
	{Path: "github.com/idsauth/idsauth/cmd/idsauth", Dir: "cmd/idsauth", Command: true},
}

// Publish writes m at version into the file-based module proxy rooted at
// proxyDir: the .info, .mod and .zip files and the line in @v/list that
// GOPROXY=file://proxyDir serves ("go help goproxy" describes the layout).
//
// The zip holds what the go command takes from a tag of the git
// repository repo: the files git tracks under m.Dir, less those of nested
// modules, and the root's LICENSE when m.Dir has none. Their contents are
// read from the working tree, so that a change can be tried before it is
// committed; a build output or any other untracked file never gets in.
// (The go command reads a tag with git archive, which also drops the
// files .gitattributes marks export-ignore; this repository marks none.)
// Publish returns the tracked files the zip leaves out, each with the
// reason.
func Publish(proxyDir, repo string, m Module, version string, at time.Time) (omitted []zip.FileError, err error) {
	mv := module.Version{Path: m.Path, Version: version}
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return nil, err
	}
	escVersion, err := module.EscapeVersion(version)
	if err != nil {
		return nil, err
	}
	files, err := trackedFiles(repo, m.Dir)
	if err != nil {
		return nil, err
	}
	goMod, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(m.Dir), "go.mod"))
	if err != nil {
		return nil, err
	}
	if m.Command {
		// The command's tag is on a commit whose go.mod has no replace
		// (RELEASING.md): go install refuses a module with one.
		if goMod, err = releaseGoMod(goMod); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Path, err)
		}
		for i, f := range files {
			if f.Path() == "go.mod" {
				files[i] = memFile{name: "go.mod", data: goMod, like: f}
			}
		}
	}
	checked, err := zip.CheckFiles(files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}

	dir := filepath.Join(proxyDir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, escVersion)
	if err := writeZip(base+".zip", mv, files); err != nil {
		return nil, err
	}
	// The go command checks a zip's limits again as it extracts it; check
	// here, where the error names the module, not in a user's download.
	if _, err := zip.CheckZip(mv, base+".zip"); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Path, err)
	}
	if err := os.WriteFile(base+".mod", goMod, 0o644); err != nil {
		return nil, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, at.UTC()})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return nil, err
	}
	if err := addToList(filepath.Join(dir, "list"), version); err != nil {
		return nil, err
	}
	return checked.Omitted, nil
}

func writeZip(name string, mv module.Version, files []zip.File) (err error) {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return zip.Create(f, mv, files)
}

func addToList(name, version string) error {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if slices.Contains(strings.Fields(string(data)), version) {
		return nil
	}
	return os.WriteFile(name, append(data, version+"\n"...), 0o644)
}

// trackedFiles lists the files git tracks under dir of repo, as zip.Files
// named relative to dir and read from the working tree. A tracked file
// missing from the working tree fails zip.Create, naming it.
func trackedFiles(repo, dir string) ([]zip.File, error) {
	pathspec := "."
	if dir != "" {
		pathspec = dir + "/"
	}
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--", pathspec)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w: %s", repo, err, stderr.Bytes())
	}
	var files []zip.File
	hasLicense := false
	for p := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if p == "" {
			continue
		}
		rel := p
		if dir != "" {
			rel = strings.TrimPrefix(p, dir+"/")
		}
		hasLicense = hasLicense || rel == "LICENSE"
		files = append(files, workFile{name: rel, file: filepath.Join(repo, filepath.FromSlash(p))})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("git tracks no file under %s/%s", repo, dir)
	}
	// The go command puts the repository's LICENSE in the zip of a module
	// in a subdirectory that has none of its own (cmd/go/internal/modfetch).
	if dir != "" && !hasLicense {
		root := filepath.Join(repo, "LICENSE")
		if _, err := os.Lstat(root); err == nil {
			files = append(files, workFile{name: "LICENSE", file: root})
		}
	}
	return files, nil
}

// workFile is a tracked file as it is in the working tree.
type workFile struct {
	name string // slash-separated, relative to the module's directory
	file string // in the working tree
}

func (f workFile) Path() string                 { return f.name }
func (f workFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.file) }
func (f workFile) Open() (io.ReadCloser, error) { return os.Open(f.file) }

// releaseGoMod is a command's go.mod as its release commit has it: with
// its replace directives dropped. Each must point a module of this
// repository at its folder (a relative path), or dropping it would change
// what the command builds with.
func releaseGoMod(data []byte) ([]byte, error) {
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range f.Replace {
		if !strings.HasPrefix(r.Old.Path, Published[0].Path) || r.New.Version != "" || !strings.HasPrefix(r.New.Path, ".") {
			return nil, fmt.Errorf("replace %s => %s %s: a release keeps only replaces of this repository's modules by their folders", r.Old.Path, r.New.Path, r.New.Version)
		}
		if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
			return nil, err
		}
	}
	f.Cleanup()
	return f.Format()
}

// memFile is a file of the zip whose content is not the working tree's.
type memFile struct {
	name string
	data []byte
	like zip.File // the tracked file it stands for, for its mode
}

func (f memFile) Path() string { return f.name }
func (f memFile) Lstat() (os.FileInfo, error) {
	fi, err := f.like.Lstat()
	if err != nil {
		return nil, err
	}
	return sizedInfo{fi, int64(len(f.data))}, nil
}
func (f memFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type sizedInfo struct {
	os.FileInfo
	size int64
}

func (s sizedInfo) Size() int64 { return s.size }

// ReleaseVersion is the newest release in repo's CHANGELOG.md, "v"
// prefixed: the version every go.mod of the repository requires the others
// at once the release commit is made (RELEASING.md).
func ReleaseVersion(repo string) (string, error) {
	data, err := os.ReadFile(filepath.Join(repo, "CHANGELOG.md"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$`).FindSubmatch(data)
	if m == nil {
		return "", errors.New(`CHANGELOG.md has no release heading "## [X.Y.Z] - YYYY-MM-DD"`)
	}
	return "v" + string(m[1]), nil
}
