// Package rpcauth is what the gRPC and Connect modules (grpcauth,
// connectauth) share: which methods need which scopes, the token read
// from the authorization values, the decision in the contract's order
// (CONTRACT.md §1, its gRPC and Connect table), and the fixed messages of
// the refusals. It imports neither grpc-go nor connect, nor anything of
// this repository above internal/: each module hands it a Validator
// made of the token-checking package (see Validator).
//
// The two modules of a release import this package of the same release;
// a module of an older release may meet this one (a user who upgrades
// the root module alone), so change its exported API only by adding.
package rpcauth

import (
	"fmt"
	"log/slog"
	"strings"
	"unicode"

	"github.com/idsauth/idsauth/scope"
)

// The services that PublicHealth and PublicReflection open: gRPC's health
// checking protocol and server reflection, both versions grpc-go and
// connect register.
const (
	HealthService            = "/grpc.health.v1.Health/"
	ReflectionService        = "/grpc.reflection.v1.ServerReflection/"
	ReflectionV1AlphaService = "/grpc.reflection.v1alpha.ServerReflection/"
)

// Config is the policy as each module's Config states it.
type Config struct {
	Scopes           map[string][]string
	DefaultScopes    []string
	Public           []string
	PublicHealth     bool
	PublicReflection bool
	Logger           *slog.Logger
}

// rule is what a method needs: nothing (public), or one of scopes.
type rule struct {
	public  bool
	scopes  []string
	refusal *Refusal // the PermissionDenied of a token without them
}

// Policy decides which calls need which scopes. It is read-only once
// built, and safe for concurrent use.
type Policy struct {
	methods  map[string]*rule // "/pkg.Service/Method"
	services map[string]*rule // "/pkg.Service/"
	def      *rule            // nil: a method listed nowhere is refused
	logger   *slog.Logger
}

// NewPolicy checks cfg and builds its tables; who names the caller in
// errors ("grpcauth.Config").
func NewPolicy(who string, cfg Config) (*Policy, error) {
	p := &Policy{methods: map[string]*rule{}, services: map[string]*rule{}, logger: cfg.Logger}
	add := func(field, name string, r *rule) error {
		service, method, ok := splitName(name)
		if !ok {
			return fmt.Errorf("%s.%s: %q is not a full method name (\"/package.Service/Method\") or a service (\"/package.Service/\")", who, field, name)
		}
		table, key := p.methods, name
		if method == "" {
			table, key = p.services, service
		}
		if _, dup := table[key]; dup {
			return fmt.Errorf("%s.%s: %q is named twice (in Scopes and Public, or Public and a Public service)", who, field, name)
		}
		table[key] = r
		return nil
	}
	public := &rule{public: true}
	names := append([]string(nil), cfg.Public...)
	if cfg.PublicHealth {
		names = append(names, HealthService)
	}
	if cfg.PublicReflection {
		names = append(names, ReflectionService, ReflectionV1AlphaService)
	}
	for _, name := range names {
		if err := add("Public", name, public); err != nil {
			return nil, err
		}
	}
	for name, scopes := range cfg.Scopes {
		r, err := newRule(who, "Scopes["+fmt.Sprintf("%q", name)+"]", scopes)
		if err != nil {
			return nil, err
		}
		if err := add("Scopes", name, r); err != nil {
			return nil, err
		}
	}
	if cfg.DefaultScopes != nil {
		r, err := newRule(who, "DefaultScopes", cfg.DefaultScopes)
		if err != nil {
			return nil, err
		}
		p.def = r
	}
	return p, nil
}

func newRule(who, field string, scopes []string) (*rule, error) {
	if len(scopes) == 0 {
		return nil, fmt.Errorf("%s.%s: no scope; a method that any valid token may call is not offered: name its scopes", who, field)
	}
	for _, s := range scopes {
		if err := checkScope(s); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", who, field, err)
		}
	}
	scopes = append([]string(nil), scopes...)
	need := strings.Join(scopes, " ")
	return &rule{scopes: scopes, refusal: &Refusal{
		Kind: InsufficientScope, Message: insufficientScopePrefix + need, Reason: "insufficient_scope", scope: need,
	}}, nil
}

// checkScope refuses a name no token can carry (RFC 6749 §3.3: printable
// ASCII but space, '"' and '\'), or a known scope misspelt in case (scope
// names are case-sensitive: it would never match).
func checkScope(s string) error {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }) {
		return fmt.Errorf("%q is not a scope name", s)
	}
	for _, known := range scope.All() {
		if s != known && strings.EqualFold(s, known) {
			return fmt.Errorf("%q differs from the scope %q only in case, and scope names are case-sensitive", s, known)
		}
	}
	return nil
}

// splitName splits "/pkg.Service/Method" into "/pkg.Service/" and
// "Method"; a service alone, "/pkg.Service/", has no method.
func splitName(name string) (service, method string, ok bool) {
	if len(name) < 3 || name[0] != '/' || strings.ContainsFunc(name, unicode.IsSpace) {
		return "", "", false
	}
	i := strings.IndexByte(name[1:], '/') + 1
	if i <= 1 || strings.IndexByte(name[i+1:], '/') >= 0 {
		return "", "", false
	}
	return name[:i+1], name[i+1:], true
}

// lookup returns the rule of the full method name, or nil when the
// configuration names it nowhere and has no default.
func (p *Policy) lookup(method string) *rule {
	if r, ok := p.methods[method]; ok {
		return r
	}
	if i := strings.LastIndexByte(method, '/'); i > 0 {
		if r, ok := p.services[method[:i+1]]; ok {
			return r
		}
	}
	return p.def
}

// Public reports whether method is served without a token.
func (p *Policy) Public(method string) bool {
	r := p.lookup(method)
	return r != nil && r.public
}
