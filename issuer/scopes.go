package issuer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idsauth/idsauth/scope"
)

// maxOwnScopes bounds Config.Scopes.
const maxOwnScopes = 64

// checkOwnScopes checks Config.Scopes, the scopes of your own that
// clients and API resources may hold beside the product's: each a scope
// name of RFC 6749 §3.3 (printable ASCII but space, quote and backslash)
// of at most 200 characters, none differing from one of the product's
// only in case (a misspelling: scope names are case-sensitive), none
// twice, at most 64. A scope that is not the product's nor listed here
// is refused wherever it is named, so that a misspelt one is found when
// the configuration is read. They are not listed in discovery's
// scopes_supported, which RFC 8414 §2 lets a server leave partial.
func checkOwnScopes(names []string) (scope.Set, error) {
	if len(names) > maxOwnScopes {
		return nil, fieldErr("scopes", "more than %d", maxOwnScopes)
	}
	for i, s := range names {
		f := fmt.Sprintf("scopes[%d]", i)
		switch {
		case s == "" || len(s) > 200 || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }):
			return nil, fieldErr(f, "%q is not a scope name (RFC 6749 §3.3: 1 to 200 printable ASCII characters, no space, quote or backslash)", s)
		case !scope.Known(s) && isProductScopeInOtherCase(s):
			return nil, fieldErr(f, "%q differs from one of %v only in case, and scope names are case-sensitive", s, scope.All())
		case slices.Contains(names[:i], s):
			return nil, fieldErr(f, "%q is listed twice", s)
		}
	}
	return scope.NewSet(names...), nil
}

func isProductScopeInOtherCase(s string) bool {
	for _, k := range scope.All() {
		if strings.EqualFold(s, k) {
			return true
		}
	}
	return false
}

// knownScopes lists the scopes a client or API resource may hold: the
// product's, then own.
func knownScopes(own scope.Set) []string {
	return append(scope.All(), own...)
}

// The values of ScopeWhenOmitted.
const (
	scopeRefuse = "refuse"
	scopeAll    = "all"
)

func checkScopeWhenOmitted(field, v string) error {
	switch v {
	case scopeRefuse, scopeAll:
		return nil
	}
	return fieldErr(field, `want "refuse" or "all", got %q`, v)
}
