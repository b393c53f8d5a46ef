package issuer

import (
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/clientip"
	"github.com/idsauth/idsauth/internal/dpop"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/secret"
)

// state is everything a configuration decides, swapped whole by Reload
// and SetRegistered. There is one per span of the key schedule, from the
// span current at the change on, each with the keys of its span; the
// rest is in parts the spans share, so that a change makes anew only the
// parts it changes: SetRegistered a roster and a face, apply the guards
// and the keyring, Reload all of them.
type state struct {
	keySet // this span's

	*face    // how the issuer speaks
	*roster  // who may ask
	*guards  // what bounds the askers
	*proofs  // what a request may prove beside a secret
	*keyring // the key schedule, and which of its spans has begun
}

// face is how the issuer speaks: where, in which profile, its documents,
// what it reads of a request.
type face struct {
	issuer         string
	prefix         string // URL path of the issuer, without a trailing slash
	identityServer bool   // the identityserver profile (Config.Profile)
	scopeArray     bool
	mcpClients     bool   // Config.MCPClients
	discovery      []byte // of the roster it is served with (withRegistered)
	cacheHeader    string
	maxBody        int64  // Config.MaxBodyBytes
	maxBodyText    string // the same, for its refusal
	// Whether a request has shown the issuer mounted at another path than
	// its URL's, logged once per configuration.
	misMounted *atomic.Bool
}

// roster is who may ask: the clients of the file and the registry, in a
// table the collector need not scan, compiled on their first use by k;
// the API resources, compiled; and what every request must know of them
// all, tallied as they enter (tally).
type roster struct {
	table    *table
	files    []fileClient            // the file's clients, compiled: what Reload puts in the table first
	apis     map[string]*apiResource // by name: who may introspect
	apiOrder []*apiResource          // the same, in the configuration's order
	// federated maps workload identities to clients (federation.go).
	federated *credIndex
	k         *compiler // compiles an entry of the table at its first use
	tally
}

// fileClient is a client of the configuration file, as given and
// compiled, its key files read.
type fileClient struct {
	cc ClientConfig
	cl *client
}

// guards are what bounds the askers: the failure budgets and who is
// counted where, the verifier of secrets, the memory of repeated
// failures; the stores among them are kept across reloads while their
// settings stay (apply).
type guards struct {
	addrs       clientip.Resolver
	budget      limit.Budget
	repeats     *repeatTable // secrets that failed; this configuration's, for a reload may make one right
	limiterCfg  limiterConfig
	limiter     limit.Store
	verifierCfg secret.VerifierConfig
	verifier    *secret.Verifier
	replayBytes int // the size of the issuer's replay cache
}

// proofs are what a request may prove beside a secret: a signed
// assertion, a DPoP proof, a client certificate.
type proofs struct {
	assertionLifetime time.Duration
	dpopWindow        time.Duration // how old a proof may be; the nonce period
	dpopNonces        bool          // each span's keySet has its nonces
	mtls              mtlsState     // mutual TLS (mtls.go)
	trust             *trust        // the trusted issuers (trust_config.go)
}

// keyring is the configuration's key schedule and its spans.
type keyring struct {
	plan     keyPlan
	schedule []ScheduledKey // the plan's report, for KeySchedule
	spans    []*state       // from the one current at the change on (apply)
	// The latest span of this configuration's schedule known to have
	// begun: the one current at its Reload, or a later one, logged when
	// found. Shared by its spans; a reload makes its own, so a request
	// still on the old configuration moves only the old one's.
	announced *atomic.Pointer[state]
}

// keySet is what one span of the key schedule publishes and signs with.
type keySet struct {
	from    time.Time // when the span starts; zero: since ever
	signer  *keys.Key
	method  jwt.SigningMethod
	header  string // the signer's encoded JWS header
	byKID   map[string]*keys.Key
	jwks    []byte
	version uint64       // KeysVersion: the same for the same keys
	nonces  *dpop.Nonces // DPoP nonces, from the signer; nil when off
}

// at returns the span of the key schedule that holds t: the last one
// starting at or before it (or the first, for a clock gone back).
func (st *state) at(t time.Time) *state {
	for i := len(st.spans) - 1; i > 0; i-- {
		if !t.Before(st.spans[i].from) {
			return st.spans[i]
		}
	}
	return st.spans[0]
}

// current returns the span of the key schedule that holds the issuer's
// now, without reading the clock when there is one span.
func (iss *Issuer) current() *state {
	st := iss.st.Load()
	if len(st.spans) == 1 {
		return st
	}
	sp := st.at(iss.now())
	if last := st.announced.Load(); sp.from.After(last.from) && st.announced.CompareAndSwap(last, sp) {
		iss.announce(sp)
	}
	return sp
}

// limiterConfig is what a new limit.Memory is made for: while it stays,
// Reload keeps the one it has.
type limiterConfig struct {
	budget limit.Budget
	bytes  int
}
