// Command idsauth is the operator's tool for an idsauth deployment: it
// makes secrets and signing keys, checks an issuer configuration before a
// reload, fetches a token, and decodes or verifies one.
//
//	idsauth hash-secret [-stdin] [-bcrypt COST]
//	idsauth gen-key -alg ES256|RS256|EdDSA -out FILE
//	idsauth check-config FILE
//	idsauth token -issuer URL -client-id ID [-scope S] [-secret-file FILE | -secret-env NAME | -key FILE] [-decode]
//	idsauth decode [-issuer URL [-audience A]] [--] [TOKEN]
//	idsauth serve [-addr HOST:PORT] [-ops-addr HOST:PORT] [-tls-cert F -tls-key F] -config FILE
//	idsauth gate [-addr HOST:PORT] [-ops-addr HOST:PORT] [-tls-cert F -tls-key F] -config FILE
//	idsauth migrate -config FILE
//	idsauth clients list|show|add|update|disable|enable|remove|rotate-secret -issuer URL -admin-id ID [ID]
//	idsauth conformance token-endpoint|resource|gate [-url URL] -issuer URL -client-id ID -scope S [-json] [-junit FILE]
//	idsauth version
//
// Every subcommand takes -h. Exit status: 0 success, 1 failure, 2 a usage
// error (and, for conformance, a run that could not happen). Secrets are never taken from a flag: a command line ends up in
// shell history and in the process list.
//
// Install it with:
//
//	go install github.com/idsauth/idsauth/cmd/idsauth@latest
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
)

// env is what a subcommand may touch of the world, so tests can run it.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// terminal reads a line from the terminal without echo, when standard
	// input is one; ok is false when it is not.
	terminal func(prompt string) (line string, ok bool, err error)
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

var commands = []command{
	{"hash-secret", "make a client secret (or hash one you have) for the configuration", hashSecret},
	{"gen-key", "make a signing key: a PKCS #8 PEM file, and print its kid", genKey},
	{"check-config", "load an issuer configuration as the issuer would and summarise it", checkConfig},
	{"token", "fetch an access token with client_credentials", token},
	{"decode", "print a token's header and claims; with -issuer, verify it", decode},
	{"introspect", "ask the issuer's introspection endpoint about a token, as an API resource", introspect},
	{"serve", "serve the identity service of a configuration file, with metrics", serve},
	{"gate", "answer proxies (nginx, Traefik, Caddy, HAProxy, Envoy) whether a request may pass", gateCommand},
	{"migrate", "bring the client registry's PostgreSQL schema to this release's version", migrateCommand},
	{"clients", "list, add, disable, enable, remove a registered client, or rotate its secret", clientsCommand},
	{"conformance", "run the contract's tables against a running token endpoint, API or gate", conformanceCommand},
	{"version", "print the version, VCS revision and Go version of this binary", version},
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, terminal: readTerminal}
	os.Exit(run(ctx, e, os.Args[1:]))
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, e env, args []string) int {
	if len(args) > 0 && (args[0] == "-version" || args[0] == "--version") {
		args = append([]string{"version"}, args[1:]...)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		var ue *usageError
		var cr *cannotRun
		switch {
		case errors.As(err, &cr):
			fmt.Fprintf(e.stderr, "idsauth %s: %v\n", c.name, err)
			return 2
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &ue):
			fmt.Fprintf(e.stderr, "idsauth %s: %v\nRun 'idsauth %s -h' for usage.\n", c.name, err, c.name)
			return 2
		}
		fmt.Fprintf(e.stderr, "idsauth %s: %v\n", c.name, explainPermission(err))
		return 1
	}
	fmt.Fprintf(e.stderr, "idsauth: unknown command %q\n\n", args[0])
	usage(e.stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: idsauth COMMAND [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, fmt.Sprintf("  %-13s %s", c.name, c.summary))
	}
	sort.Strings(names)
	fmt.Fprintln(w, strings.Join(names, "\n"))
	fmt.Fprintln(w, "\nRun 'idsauth COMMAND -h' for a command's flags. Exit status: 0 ok, 1 failure, 2 usage error.")
}

// flags returns a flag set for a subcommand whose errors and help go to
// e.stderr, and whose parse errors are usage errors.
func flags(e env, name, args, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: idsauth %s %s\n\n%s\n", name, args, about)
		if hasFlags(fs) {
			fmt.Fprintln(e.stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse parses args, turning a parse error into a usage error (the flag
// package has printed it already, with the usage).
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err.Error()}
	}
	return nil
}
