// Command apicheck keeps a snapshot of the exported API of every module
// idsauth publishes, as Go keeps api/go1.N.txt, and fails when the API
// changes without the snapshot, or without the CHANGELOG.
//
//	go run . -root ../..        check (CI): the API is the snapshot's, and
//	                            what changed since the last release is in
//	                            the CHANGELOG's Unreleased section
//	go run . -root ../.. -w     write the snapshot of the API as it is
//
// The snapshot is one line per exported name, field, method and interface
// method, with its type (api/<module>.txt). Against the snapshot of the
// latest release tag (git show TAG:api/<module>.txt), a line removed or
// changed is an incompatible change, and so is a method added to an
// interface (every implementation outside the module breaks); any other
// added line is a compatible one. Every change needs an entry in the
// CHANGELOG's Unreleased section, and every incompatible change must name
// its package and identifier there ("middleware.DefaultRealm").
//
// It lives in a module of its own under .ci so that golang.org/x/tools
// stays out of the published modules.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

// module is one published module: its folder under the root, its snapshot
// file and the prefix of its release tags.
type module struct {
	dir, snapshot, tagPrefix string
}

var modules = []module{
	{dir: ".", snapshot: "api/idsauth.txt", tagPrefix: "v"},
	{dir: "redisstore", snapshot: "api/redisstore.txt", tagPrefix: "redisstore/v"},
	{dir: "pgregistry", snapshot: "api/pgregistry.txt", tagPrefix: "pgregistry/v"},
	{dir: "idsauthotel", snapshot: "api/idsauthotel.txt", tagPrefix: "idsauthotel/v"},
	{dir: "grpcauth", snapshot: "api/grpcauth.txt", tagPrefix: "grpcauth/v"},
	{dir: "connectauth", snapshot: "api/connectauth.txt", tagPrefix: "connectauth/v"},
	{dir: "mcpauth", snapshot: "api/mcpauth.txt", tagPrefix: "mcpauth/v"},
}

func main() {
	root := flag.String("root", ".", "the repository's root")
	write := flag.Bool("w", false, "write the snapshots instead of checking them")
	flag.Parse()
	if err := run(*root, *write, modules); err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(1)
	}
}

func run(root string, write bool, modules []module) error {
	changelog, _ := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	unreleased := unreleasedSection(string(changelog))
	var failed []string
	for _, m := range modules {
		lines, err := listAPI(filepath.Join(root, m.dir))
		if err != nil {
			return fmt.Errorf("%s: %w", m.dir, err)
		}
		path := filepath.Join(root, m.snapshot)
		if write {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				return err
			}
			fmt.Printf("wrote %s (%d lines)\n", m.snapshot, len(lines))
			continue
		}
		committed, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w (write it with -w)", m.snapshot, err)
		}
		if d := diff(splitLines(string(committed)), lines); !d.empty() {
			failed = append(failed, fmt.Sprintf("%s: the API is not the snapshot's; if the change is meant, run (cd .ci/apicheck && go run . -root ../.. -w), commit %s and say it in CHANGELOG.md:\n%s",
				m.dir, m.snapshot, d))
			continue
		}
		tag, old, err := lastRelease(root, m)
		if err != nil {
			return err
		}
		if tag == "" {
			fmt.Printf("%s: API is the snapshot's (%d lines); no release tag yet to compare with\n", m.dir, len(lines))
			continue
		}
		d := diff(old, lines)
		if problems := d.changelogProblems(unreleased); len(problems) > 0 {
			failed = append(failed, fmt.Sprintf("%s: changed since %s, and CHANGELOG.md's Unreleased section does not say so:\n  %s\n%s",
				m.dir, tag, strings.Join(problems, "\n  "), d))
			continue
		}
		fmt.Printf("%s: API is the snapshot's (%d lines); since %s: %d incompatible, %d compatible changes, in the CHANGELOG\n",
			m.dir, len(lines), tag, len(d.incompatible), len(d.compatible))
	}
	if len(failed) > 0 {
		return fmt.Errorf("\n%s", strings.Join(failed, "\n"))
	}
	return nil
}

// lastRelease returns the newest release tag of m and its snapshot, or ""
// when m has no release yet.
func lastRelease(root string, m module) (string, []string, error) {
	out, err := exec.Command("git", "-C", root, "tag", "--list", m.tagPrefix+"[0-9]*", "--sort=-v:refname").Output()
	if err != nil {
		return "", nil, fmt.Errorf("git tag: %w", err)
	}
	tags := splitLines(string(out))
	if len(tags) == 0 {
		return "", nil, nil
	}
	tag := tags[0]
	snap, err := exec.Command("git", "-C", root, "show", tag+":"+m.snapshot).Output()
	if err != nil {
		return "", nil, fmt.Errorf("%s has no %s: %w", tag, m.snapshot, err)
	}
	return tag, splitLines(string(snap)), nil
}

// listAPI lists the exported API of the module in dir: its packages but
// internal ones, commands and tests.
func listAPI(dir string) ([]string, error) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes, Dir: dir}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			return nil, fmt.Errorf("%s: %v", p.PkgPath, p.Errors[0])
		}
		if p.Name == "main" || isInternal(p.PkgPath) {
			continue
		}
		lines = append(lines, packageAPI(p.Types)...)
	}
	sort.Strings(lines)
	return lines, nil
}

func isInternal(path string) bool {
	for _, e := range strings.Split(path, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}

// packageAPI lists one package's exported API, each line starting with
// the package's path.
func packageAPI(pkg *types.Package) []string {
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Path()
	}
	prefix := "pkg " + pkg.Path() + ", "
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, prefix+fmt.Sprintf(format, args...)) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, types.TypeString(obj.Type(), qual), obj.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, types.TypeString(obj.Type(), qual))
		case *types.Func:
			add("func %s%s", name, strings.TrimPrefix(types.TypeString(obj.Type(), qual), "func"))
		case *types.TypeName:
			typeAPI(obj, qual, add)
		}
	}
	return lines
}

// typeAPI lists an exported type: its kind, its exported fields (of a
// struct), its methods (of an interface), and the methods of its method
// sets.
func typeAPI(obj *types.TypeName, qual types.Qualifier, add func(string, ...any)) {
	name := obj.Name()
	if tp := typeParams(obj); tp != "" {
		name += tp
	}
	if obj.IsAlias() {
		add("type %s = %s", name, types.TypeString(obj.Type(), qual))
		return
	}
	switch u := obj.Type().Underlying().(type) {
	case *types.Struct:
		add("type %s struct", name)
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			if f.Exported() {
				if f.Embedded() {
					add("type %s struct, embedded %s", name, types.TypeString(f.Type(), qual))
				} else {
					add("type %s struct, %s %s", name, f.Name(), types.TypeString(f.Type(), qual))
				}
			}
		}
	case *types.Interface:
		add("type %s interface", name)
		for i := 0; i < u.NumMethods(); i++ {
			m := u.Method(i)
			if m.Exported() {
				add("type %s interface, %s%s", name, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), qual), "func"))
			} else {
				add("type %s interface, unexported methods", name)
			}
		}
		return // an interface's methods are listed above
	default:
		add("type %s %s", name, types.TypeString(u, qual))
	}
	for _, recv := range []types.Type{obj.Type(), types.NewPointer(obj.Type())} {
		ms := types.NewMethodSet(recv)
		for i := 0; i < ms.Len(); i++ {
			m := ms.At(i).Obj()
			if !m.Exported() {
				continue
			}
			if _, isPtr := recv.(*types.Pointer); isPtr && types.NewMethodSet(obj.Type()).Lookup(m.Pkg(), m.Name()) != nil {
				continue // listed with the value receiver
			}
			r := obj.Name()
			if _, isPtr := recv.(*types.Pointer); isPtr {
				r = "*" + r
			}
			add("method (%s) %s%s", r, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), qual), "func"))
		}
	}
}

func typeParams(obj *types.TypeName) string {
	named, ok := obj.Type().(*types.Named)
	if !ok || named.TypeParams().Len() == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < named.TypeParams().Len(); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		tp := named.TypeParams().At(i)
		fmt.Fprintf(&b, "%s %s", tp.Obj().Name(), tp.Constraint())
	}
	b.WriteString("]")
	return b.String()
}

// changes is what differs between two snapshots.
type changes struct {
	incompatible, compatible []string
}

func (d changes) empty() bool { return len(d.incompatible)+len(d.compatible) == 0 }

func (d changes) String() string {
	var b bytes.Buffer
	for _, l := range d.incompatible {
		fmt.Fprintf(&b, "  - incompatible: %s\n", l)
	}
	for _, l := range d.compatible {
		fmt.Fprintf(&b, "  + compatible:   %s\n", l)
	}
	return b.String()
}

// diff classifies the lines of now against old: a line of old that is
// gone is incompatible (removed, or changed, which adds a line too), and
// so is a method added to an interface; any other new line is compatible.
func diff(old, now []string) changes {
	in := func(set []string) map[string]bool {
		m := make(map[string]bool, len(set))
		for _, l := range set {
			m[l] = true
		}
		return m
	}
	oldSet, nowSet := in(old), in(now)
	var d changes
	for _, l := range old {
		if !nowSet[l] {
			d.incompatible = append(d.incompatible, l)
		}
	}
	for _, l := range now {
		if oldSet[l] {
			continue
		}
		if addsInterfaceMethod(l, oldSet) {
			d.incompatible = append(d.incompatible, l)
		} else {
			d.compatible = append(d.compatible, l)
		}
	}
	return d
}

// addsInterfaceMethod reports whether l is a method of an interface that
// old already had: implementations of it outside the module break.
func addsInterfaceMethod(l string, old map[string]bool) bool {
	i := strings.Index(l, " interface, ")
	if i < 0 {
		return false
	}
	return old[l[:i]+" interface"]
}

// identifier names the package and identifier a snapshot line is about,
// as a CHANGELOG would: "middleware.DefaultRealm", "client.Config".
func identifier(l string) string {
	rest, ok := strings.CutPrefix(l, "pkg ")
	if !ok {
		return l
	}
	path, decl, _ := strings.Cut(rest, ", ")
	pkg := path[strings.LastIndex(path, "/")+1:]
	f := strings.Fields(decl)
	if len(f) < 2 {
		return pkg
	}
	name := f[1]
	if f[0] == "method" && len(f) >= 3 { // method (*T) M(...)
		recv := strings.Trim(f[1], "(*)")
		m := f[2]
		if j := strings.IndexAny(m, "(["); j >= 0 {
			m = m[:j]
		}
		return pkg + "." + recv + "." + m
	}
	if j := strings.IndexAny(name, "(["); j >= 0 {
		name = name[:j]
	}
	return pkg + "." + name
}

// changelogProblems lists what the CHANGELOG's Unreleased section lacks
// for these changes: an entry at all, and the name of every incompatible
// change.
func (d changes) changelogProblems(unreleased string) []string {
	if d.empty() {
		return nil
	}
	var problems []string
	if strings.TrimSpace(unreleased) == "" {
		problems = append(problems, "the Unreleased section is empty")
	}
	seen := map[string]bool{}
	for _, l := range d.incompatible {
		id := identifier(l)
		if seen[id] {
			continue
		}
		seen[id] = true
		if !strings.Contains(unreleased, id) {
			problems = append(problems, fmt.Sprintf("incompatible change to %s is not named", id))
		}
	}
	return problems
}

// unreleasedSection returns the text under "## [Unreleased]" up to the
// next "## " heading.
func unreleasedSection(changelog string) string {
	_, rest, ok := strings.Cut(changelog, "## [Unreleased]")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
