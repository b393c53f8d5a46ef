// Command publish puts idsauth's published modules (releasetest.Published,
// seven), made from the files git tracks in this repository, into a
// file-based module proxy, the way the release test does, so that a
// release can be tried by hand with GOPROXY=file://DIR before any tag is
// pushed (RELEASING.md). The version is CHANGELOG.md's newest release:
// the one the release commit makes every go.mod require.
//
//	go run -C internal/releasetest ./cmd/publish -dir /tmp/idsauth-proxy
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/releasetest"
)

func main() {
	dir := flag.String("dir", "", "the module proxy's directory (made if missing); GOPROXY=file://DIR serves it")
	flag.Parse()
	if *dir == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: publish -dir DIR")
		os.Exit(2)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "publish: run it inside the repository:", err)
		os.Exit(1)
	}
	repo := strings.TrimSpace(string(top))
	version, err := releasetest.ReleaseVersion(repo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "publish:", err)
		os.Exit(1)
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "publish:", err)
		os.Exit(1)
	}
	now := time.Now()
	for _, m := range releasetest.Published {
		omitted, err := releasetest.Publish(abs, repo, m, version, now)
		if err != nil {
			fmt.Fprintf(os.Stderr, "publish: %s: %v\n", m.Path, err)
			os.Exit(1)
		}
		fmt.Printf("%s@%s (%d tracked files left out: nested modules and the like)\n", m.Path, version, len(omitted))
	}
	fmt.Printf("export GOPROXY=file://%s,$(go env GOPROXY) GONOSUMDB=github.com/idsauth\n", filepath.ToSlash(abs))
}
