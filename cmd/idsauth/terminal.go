package main

import (
	"fmt"
	"os"

	"golang.org/x/term"
)

// readTerminal reads a line from standard input without echo, when it is
// a terminal, with prompt on standard error.
func readTerminal(prompt string) (string, bool, error) {
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return "", false, nil
	}
	fmt.Fprint(os.Stderr, prompt)
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(os.Stderr)
	return string(b), true, err
}
