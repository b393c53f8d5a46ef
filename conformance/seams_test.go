package conformance

import (
	"fmt"
	"strings"
	"testing"
)

// TestSeams crosses every capability with every other, where the defects
// of issue 39 were found: a client's source (the configuration file, the
// PostgreSQL registry) × what happened to it since its token was issued ×
// where the token is checked, exhaustively; and, pairwise over those and
// each other, how the client authenticates × the kind of token × its
// binding × the token store and the replica that answers. Each case
// registers a client, gets a token, checks it at its place, makes its
// event happen, checks again, and removes what it registered. What each
// check must answer comes from the rules in expect, and the combinations
// that cannot exist are skipped by the rules in skipped, never by a list
// of cases. A capability added later adds its values here, pairwise.
func TestSeams(t *testing.T) {
	f := startFleet(t)
	cases, skippedByRule := seamCases()
	if err := pairwiseCovered(cases); err != nil {
		t.Fatal(err)
	}
	// The cases that wait for their tokens to expire run side by side,
	// after the others, which change the file and the administrator one
	// at a time.
	var waiting []seamCase
	for _, c := range cases {
		if c.event == tokenExpired {
			waiting = append(waiting, c)
			continue
		}
		t.Run(c.name(), func(t *testing.T) { f.run(t, c) })
	}
	t.Run("waiting", func(t *testing.T) {
		for _, c := range waiting {
			t.Run(c.name(), func(t *testing.T) {
				t.Parallel()
				f.run(t, c)
			})
		}
	})
	if testing.Verbose() {
		fmt.Printf("seams: %d cases run, %d skipped by rule\n", len(cases), skippedByRule)
	}
}

// The dimensions of a case. The first three are crossed exhaustively,
// the others pairwise.
type (
	source  string // where the client is registered
	event   string // what happens to it after its token is issued
	place   string // where the token is checked
	authn   string // how the client authenticates at the token endpoint
	kind    string // the kind of its token
	binding string // what its token is bound to
	store   string // the token store of the replica that issues it, and the replica that checks it
)

const (
	fromFile     source = "file"
	fromRegistry source = "registry"

	nothing        event = "nothing"
	disabled       event = "disabled"
	enabledAgain   event = "enabled again"
	removed        event = "removed"
	reRegistered   event = "removed and registered again"
	secretDropped  event = "a secret dropped"
	scopeTaken     event = "a scope taken away"
	fileReloaded   event = "the file reloaded without it"
	adminRemoved   event = "an administrator removed"
	tokenExpired   event = "the token expired"
	atIssuer       place = "introspection at the issuer"
	atLocalAPI     place = "an API checking JWTs locally"
	atIntrospector place = "an API introspecting"
	atGRPC         place = "grpcauth"
	atConnect      place = "connectauth"
	atMCP          place = "mcpauth"

	secretBasic authn = "client_secret_basic"
	secretPost  authn = "client_secret_post"
	keyJWT      authn = "private_key_jwt"
	tlsAuth     authn = "tls_client_auth"
	selfSigned  authn = "self_signed_tls_client_auth"

	jwtToken       kind = "JWT"
	referenceToken kind = "reference"

	bearer      binding = "bearer"
	dpopBound   binding = "DPoP"
	certBound   binding = "certificate"
	redisSame   store   = "Redis, the same replica"
	redisOther  store   = "Redis, another replica"
	memoryStore store   = "memory"
)

var (
	sources = []source{fromFile, fromRegistry}
	events  = []event{nothing, disabled, enabledAgain, removed, reRegistered, secretDropped, scopeTaken, fileReloaded, adminRemoved, tokenExpired,
		workloadKeyRotated, workloadReused, workloadDown}
	places   = []place{atIssuer, atLocalAPI, atIntrospector, atGRPC, atConnect, atJWKSAPI, atMCP, atGate}
	authns   = []authn{secretBasic, secretPost, keyJWT, tlsAuth, selfSigned, workloadToken}
	kinds    = []kind{jwtToken, referenceToken}
	bindings = []binding{bearer, dpopBound, certBound}
	stores   = []store{redisSame, redisOther, memoryStore}
)

// seamCase is one case of TestSeams.
type seamCase struct {
	source  source
	event   event
	place   place
	authn   authn
	kind    kind
	binding binding
	store   store
}

func (c seamCase) name() string {
	return strings.ReplaceAll(fmt.Sprintf("%s/%s/%s/%s,%s,%s,%s", c.source, c.event, c.place, c.authn, c.kind, c.binding, c.store), " ", "_")
}

// The answers of a check.
type outcome string

const (
	ok      outcome = "accepted"
	dead    outcome = "refused as invalid" // 401 invalid_token, Unauthenticated, or inactive
	noScope outcome = "refused for scope"  // 403 insufficient_scope, PermissionDenied, or active without the scope
)

// secretAuth reports whether a client authenticates with a secret.
func (a authn) secretAuth() bool { return a == secretBasic || a == secretPost }

// certAuth reports whether a client authenticates with its certificate.
func (a authn) certAuth() bool { return a == tlsAuth || a == selfSigned }

// skipped says why a combination cannot exist, or "".
func skipped(c seamCase) string {
	switch {
	case c.source == fromFile && (c.event == disabled || c.event == enabledAgain):
		return "a configuration file has no disable"
	case c.source == fromFile && c.event == fileReloaded:
		return "for a client of the file, that is its removal"
	case c.event == secretDropped && !c.authn.secretAuth():
		return "a client without a secret has none to drop"
	case c.event.workload() && !c.authn.workload():
		return "only a client a workload authenticates has a workload issuer"
	case c.authn.certAuth() && c.binding == bearer:
		return "the tokens of a client that authenticates with a certificate are bound to it"
	case c.kind == referenceToken && (c.place == atLocalAPI || c.place == atJWKSAPI):
		return "a reference token is no JWT to check locally"
	}
	return ""
}

// expect is what a check of c's token answers, before its event (after:
// false) or after it: the rules of the contract, not a list.
func expect(c seamCase, after bool) outcome {
	switch {
	// A gRPC or Connect call carries no DPoP proof: a DPoP-bound token
	// presented there, without its proof, is refused.
	case c.binding == dpopBound && (c.place == atGRPC || c.place == atConnect):
		return dead
	case !after:
		return ok
	// An expired token is refused everywhere.
	case c.event == tokenExpired:
		return dead
	// A JWT checked locally lives until its exp: nothing recalls it.
	case c.place == atLocalAPI || c.place == atJWKSAPI:
		return ok
	}
	switch c.event {
	case disabled, enabledAgain, removed, reRegistered, secretDropped:
		// Issued under a registration that is no more: never active
		// again, even once a registration of the ID is served again.
		return dead
	case scopeTaken:
		return noScope
	}
	// Nothing happened to the client itself: the file reloaded without a
	// registered client, another client (the administrator) removed.
	return ok
}

// fresh reports whether, after c's event, a new token of the client is
// asked for and checked: it must be accepted, as the registration served
// again is a client of its own.
func fresh(c seamCase) bool {
	switch c.event {
	case nothing, enabledAgain, reRegistered, secretDropped, fileReloaded, adminRemoved,
		workloadKeyRotated, workloadReused, workloadDown: // keys known serve while the issuer is down
		return !(c.binding == dpopBound && (c.place == atGRPC || c.place == atConnect))
	}
	return false
}

// seamCases returns the cases: every source × event × place not skipped
// by a rule, each given the values of the pairwise dimensions that cover
// the most pairs not yet covered, and how many the rules skipped.
func seamCases() ([]seamCase, int) {
	covered := map[[2]string]bool{}
	var cases []seamCase
	skippedByRule := 0
	for _, s := range sources {
		for _, e := range events {
			for _, p := range places {
				var best seamCase
				bestScore := -1
				for _, c := range combinations(s, e, p) {
					if n := len(uncovered(c, covered)); n > bestScore {
						best, bestScore = c, n
					}
				}
				if bestScore < 0 {
					skippedByRule++
					continue
				}
				for _, pr := range pairsOf(best) {
					covered[pr] = true
				}
				cases = append(cases, best)
			}
		}
	}
	return cases, skippedByRule
}

// combinations are the cases of s, e and p that no rule skips.
func combinations(s source, e event, p place) []seamCase {
	var out []seamCase
	for _, a := range authns {
		for _, k := range kinds {
			for _, b := range bindings {
				for _, st := range stores {
					c := seamCase{s, e, p, a, k, b, st}
					if skipped(c) == "" {
						out = append(out, c)
					}
				}
			}
		}
	}
	return out
}

// values are c's value in each dimension, named.
func (c seamCase) values() []string {
	return []string{"source=" + string(c.source), "event=" + string(c.event), "place=" + string(c.place),
		"authn=" + string(c.authn), "kind=" + string(c.kind), "binding=" + string(c.binding), "store=" + string(c.store)}
}

// pairsOf are the pairs of c's values that pairwise covering must see:
// every pair but those of two exhaustive dimensions.
func pairsOf(c seamCase) [][2]string {
	v := c.values()
	var out [][2]string
	for i := range v {
		for j := max(i+1, 3); j < len(v); j++ {
			out = append(out, [2]string{v[i], v[j]})
		}
	}
	return out
}

func uncovered(c seamCase, covered map[[2]string]bool) [][2]string {
	var out [][2]string
	for _, pr := range pairsOf(c) {
		if !covered[pr] {
			out = append(out, pr)
		}
	}
	return out
}

// pairwiseCovered checks that cases hold every pair of values that some
// combination no rule skips holds.
func pairwiseCovered(cases []seamCase) error {
	have := map[[2]string]bool{}
	for _, c := range cases {
		for _, pr := range pairsOf(c) {
			have[pr] = true
		}
	}
	var missing []string
	seen := map[[2]string]bool{}
	for _, s := range sources {
		for _, e := range events {
			for _, p := range places {
				for _, c := range combinations(s, e, p) {
					for _, pr := range pairsOf(c) {
						if !have[pr] && !seen[pr] {
							seen[pr] = true
							missing = append(missing, pr[0]+" with "+pr[1])
						}
					}
				}
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("seams: %d pairs that can exist are in no case: %s", len(missing), strings.Join(missing, "; "))
	}
	return nil
}
