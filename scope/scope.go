// Package scope names the two OAuth 2.0 scopes of the service and the API
// families each one grants, and parses the scope claim of an access token.
//
// The mapping is §5.3 of the product's published authentication document,
// settled in [the contract] §1: pd_AdminWebApi grants the Admin API;
// pd_ConnectWebApi grants the Connect API and the Connect Session API. Neither grants the other, and SCIM is
// granted by no scope: it authenticates with per-tenant tokens. Scope
// names follow [RFC 6749] §3.3; the scope claim, [RFC 9068] §2.2.3.
//
// [RFC 6749]: https://www.rfc-editor.org/rfc/rfc6749
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package scope

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The scopes the identity service issues.
const (
	// AdminWebAPI grants the Admin API.
	AdminWebAPI = "pd_AdminWebApi"
	// ConnectWebAPI grants the Connect API and the Connect Session API.
	ConnectWebAPI = "pd_ConnectWebApi"
)

// All lists every scope the identity service knows, in a stable order.
func All() []string { return []string{AdminWebAPI, ConnectWebAPI} }

// Known reports whether s is one of the scopes in All.
func Known(s string) bool { return s == AdminWebAPI || s == ConnectWebAPI }

// Family is one of the service's API families.
type Family int

// The API families of the service.
const (
	Admin Family = iota + 1
	Connect
	ConnectSession
	SCIM
)

// String returns the family's name as the contract writes it.
func (f Family) String() string {
	switch f {
	case Admin:
		return "Admin API"
	case Connect:
		return "Connect API"
	case ConnectSession:
		return "Connect Session API"
	case SCIM:
		return "SCIM"
	}
	return "unknown API family"
}

// Required returns the scope that grants the family. ok is false for SCIM,
// which no identity-service scope grants, and for unknown families.
func (f Family) Required() (scope string, ok bool) {
	switch f {
	case Admin:
		return AdminWebAPI, true
	case Connect, ConnectSession:
		return ConnectWebAPI, true
	}
	return "", false
}

// Grants returns the API families a scope grants, or nil for a scope the
// service does not know.
func Grants(scope string) []Family {
	switch scope {
	case AdminWebAPI:
		return []Family{Admin}
	case ConnectWebAPI:
		return []Family{Connect, ConnectSession}
	}
	return nil
}

// Set is a set of scope names. The zero value is an empty set. A Set is a
// small sorted slice, which beats a map for the one or two scopes a token
// carries.
type Set []string

// NewSet returns the set of the given scopes; duplicates and empty strings
// are dropped.
func NewSet(scopes ...string) Set {
	s := make(Set, 0, len(scopes))
	for _, v := range scopes {
		if v != "" {
			s = append(s, v)
		}
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// Has reports whether the set holds scope.
func (s Set) Has(scope string) bool {
	_, found := slices.BinarySearch(s, scope)
	return found
}

// HasAny reports whether the set holds at least one of scopes.
func (s Set) HasAny(scopes ...string) bool {
	for _, v := range scopes {
		if s.Has(v) {
			return true
		}
	}
	return false
}

// String returns the scopes space-delimited, the [RFC 6749] §3.3 form.
//
// [RFC 6749]: https://www.rfc-editor.org/rfc/rfc6749
func (s Set) String() string { return strings.Join(s, " ") }

// ErrInvalidClaim is returned by ParseClaim for a scope claim that is neither
// a string nor an array of strings.
var ErrInvalidClaim = errors.New("scope claim is neither a string nor an array of strings")

// ErrInvalidName is returned by ParseClaim for a scope claim in which a
// scope name holds whitespace or a control character: a tab, a line break,
// a non-breaking space (U+00A0) and the like. [RFC 6749] §3.3 separates
// scope names with U+0020 alone and allows no other whitespace in them, so
// such a claim is refused rather than read one way or the other.
// errors.Is(ErrInvalidName, ErrInvalidClaim) holds.
//
// [RFC 6749]: https://www.rfc-editor.org/rfc/rfc6749
var ErrInvalidName error = invalidName{}

type invalidName struct{}

func (invalidName) Error() string        { return "scope claim holds a scope name with whitespace in it" }
func (invalidName) Is(target error) bool { return target == ErrInvalidClaim }

// Parse splits a space-delimited scope string ([RFC 6749] §3.3, [RFC 9068]
// §2.2.3). The delimiter is U+0020 alone: a tab, a line break or a
// non-breaking space (U+00A0) stays part of a name, so
// "pd_ConnectWebApi\u00a0pd_AdminWebApi" is one name that matches neither
// scope. Runs of spaces and spaces at either end are tolerated.
//
// [RFC 6749]: https://www.rfc-editor.org/rfc/rfc6749
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
func Parse(s string) Set {
	out := make(Set, 0, strings.Count(s, " ")+1)
	for name := range strings.SplitSeq(s, " ") {
		if name != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ParseClaim parses the JSON value of a scope claim: a space-delimited
// string ([RFC 9068]), split as Parse does on U+0020 only, or an array of
// strings (what IdentityServer emits). An absent claim (nil or JSON null)
// is an empty set. A name holding any other whitespace or a control
// character fails with ErrInvalidName, a value of another JSON type with
// ErrInvalidClaim.
//
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
func ParseClaim(raw json.RawMessage) (Set, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var names []string
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, ErrInvalidClaim
		}
		names = strings.Split(s, " ")
	case '[':
		if err := json.Unmarshal(raw, &names); err != nil {
			return nil, ErrInvalidClaim
		}
		for _, v := range names {
			if strings.Contains(v, " ") {
				return nil, ErrInvalidName
			}
		}
	default:
		return nil, ErrInvalidClaim
	}
	for _, v := range names {
		if strings.IndexFunc(v, oddRune) >= 0 {
			return nil, ErrInvalidName
		}
	}
	return NewSet(names...), nil
}

// oddRune reports runes that may not appear in a scope name.
func oddRune(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError
}
