package issuer

import (
	"errors"
	"fmt"
)

// The rules of a registered client's or API resource's ID, and of its
// keys: what a registry may hold that a configuration file need not say.

// registered compiles one registered client or API resource (api) with
// compile, the path of the file's, after the rules of a registration of
// its own: an ID of printable ASCII, not ".", ".." or "/", not taken under
// ASCII case folding; keys as JWKs, not files. It returns the client, or
// the *RegistrationError of one left out.
func (k *compiler) registered(api bool, id string, kcs []ClientKeyConfig, takenBy func(string) (string, bool), compile func() (*client, error)) (*client, error) {
	list, member := "clients", "clientId"
	if api {
		list, member = "apiResources", "name"
	}
	at := func() string { return fmt.Sprintf("%s (%q)", list, id) } // for an error only
	left := func(err error, isTaken bool) (*client, error) {
		var ce *ConfigError
		if !errors.As(err, &ce) {
			ce = &ConfigError{Field: at(), Reason: err.Error(), Err: err}
		}
		return nil, &RegistrationError{API: api, ID: id, Taken: isTaken, Err: ce}
	}
	if err := checkRegisteredID(id); err != nil {
		return left(fieldErr(at()+"."+member, "%v", err), false)
	}
	if why, ok := takenBy(id); ok {
		return left(fieldErr(at()+"."+member, "%s", why), true)
	}
	for i, kc := range kcs {
		if kc.File != "" {
			return left(fieldErr(fmt.Sprintf("%s.publicKeys[%d].file", at(), i), "a registered key is a JWK: a file would be read from one replica's disk"), false)
		}
	}
	cl, err := compile()
	if err != nil {
		return left(err, false)
	}
	return cl, nil
}

// takenIDs are the IDs of one kind taken, under ASCII case folding, and
// by whom.
type takenIDs map[string]taker

// taker is who took an ID: why, or, when why is empty, the registration
// of first, an ID equal under folding (formatted only for a clash).
type taker struct{ why, first string }

// add records that why took id; an empty why, that id is a registration
// of its own.
func (t takenIDs) add(id, why string) {
	if _, ok := t[foldASCII(id)]; !ok {
		t[foldASCII(id)] = taker{why: why, first: id}
	}
}

// lookup says who took id, under ASCII case folding.
func (t takenIDs) lookup(id string) (string, bool) {
	tk, ok := t[foldASCII(id)]
	if ok && tk.why == "" {
		return twice(tk.first), true
	}
	return tk.why, ok
}

// twice is why an ID is refused that is first, a registered client's,
// under ASCII case folding.
func twice(first string) string {
	return fmt.Sprintf("registered twice, under ASCII case folding: the first one, %q, is served", first)
}

// checkRegisteredID refuses an ID that a registry may not hold: anything
// but printable ASCII (U+0021 to U+007E), which a terminal, a log line
// or a URL path could take for something else, and "." and "..", which
// a URL path cannot carry as a segment, and "/", which net/http's router
// takes, even escaped (%2F), for a trailing slash: no administration
// path could name them, to disable one.
func checkRegisteredID(id string) error {
	switch id {
	case "":
		return errors.New("empty")
	case ".", "..":
		return fmt.Errorf("%q is a URL path's dot segment: no administration path could name it", id)
	case "/":
		return fmt.Errorf("%q is taken for a URL path's trailing slash, even escaped: no administration path could name it", id)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("want printable ASCII (U+0021 to U+007E), got %q", id)
		}
	}
	return nil
}

// foldASCII returns id with its ASCII capitals in lower case: two IDs
// equal so are one, for people.
func foldASCII(id string) string {
	for i := 0; i < len(id); i++ {
		if 'A' <= id[i] && id[i] <= 'Z' {
			b := []byte(id)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return id
}
