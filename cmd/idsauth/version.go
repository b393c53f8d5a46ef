package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// buildInfo returns the module version, the VCS revision (with "+dirty"
// when the tree had changes) and time, and the Go version of this binary.
func buildInfo() (version, revision, goVersion string) {
	version, revision, goVersion = "(unknown)", "(unknown)", "(unknown)"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	goVersion = bi.GoVersion
	if bi.Main.Version != "" {
		version = bi.Main.Version // "(devel)" when built from a checkout
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		revision = rev + dirty
		if at != "" {
			revision += " " + at
		}
	}
	return
}

func version(_ context.Context, e env, args []string) error {
	fs := flags(e, "version", "", "Print the module version, the VCS revision and time, and the Go version of this binary.")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("version takes no arguments")
	}
	v, rev, gov := buildInfo()
	fmt.Fprintf(e.stdout, "idsauth %s\nrevision %s\n%s\n", v, rev, gov)
	return nil
}
