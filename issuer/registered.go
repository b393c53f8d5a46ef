package issuer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/idsauth/idsauth/tokenstore"
)

// Registered clients: the clients and API resources of a registry beside
// the configuration file (a database an operator manages through an
// administration API), served beside the file's. The file's are
// read-only to the registry and win a clash; what does not fit the
// configuration of the moment is left out, never half-applied.

// SetRegistered makes clients and apis the issuer's registered clients
// and API resources, beside the configuration's (Config.Clients and
// Config.APIResources), in place of those of the previous call: a
// registry such as github.com/idsauth/idsauth/pgregistry calls it with
// every client it holds, each time they change. It swaps them in as
// Reload swaps a configuration: at once, for every request that starts
// after it returns, and introspection answers about the tokens of a
// client no longer given (removed or disabled) as about a removed
// client's: inactive, and for good once the client is given again with
// another Epoch. Reload keeps them, checked against the new
// configuration. No request waits on the registry: what the issuer
// serves is what it was last given.
//
// Each is checked and compiled by the very code that compiles the file's,
// with the configuration's defaults (the issuer URL's audience, its own
// scopes, its mutual TLS CAs, its profile). One that does not fit is left
// out, and the others applied: one whose ID is not printable ASCII
// (U+0021 to U+007E) or is ".", ".." or "/", one whose ID is a configuration
// file's client's or, under ASCII case folding, an earlier one's (the
// file's wins, then the first), one that names a key file (a registered
// client's keys are JWKs: a file would be on one replica's disk), one
// whose AccessTokenLifetime outlives what the key schedule allows, or
// any other field the file would refuse. The error joins one
// *RegistrationError for each left out, whose ConfigError's Field names
// the field as the file would, without an index: `clients
// ("reporting").scopes[0]`, `apiResources ("reports-api").name`. Nil:
// all of them are served.
//
// A registered client's secret hashes are checked at every call, as a
// reload checks the file's: a bcrypt hash costs one bcrypt check each
// time (see package secret), so a registry should hold fast hashes.
func (iss *Issuer) SetRegistered(clients []ClientConfig, apis []APIResourceConfig) error {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	r := registered{clients: slices.Clone(clients), apis: slices.Clone(apis)}
	st, left, err := iss.file.withRegistered(r)
	if err != nil {
		return err
	}
	iss.renew(iss.st.Load(), st, nil)
	now := iss.now()
	iss.apply(st, iss.file.setsAt(now), now)
	iss.registered = r
	return errors.Join(left...)
}

// CheckRegistered checks clients and apis as SetRegistered would, and
// returns the same error, without applying them: an administration API
// asks it before it stores a change.
func (iss *Issuer) CheckRegistered(clients []ClientConfig, apis []APIResourceConfig) error {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	_, left, err := iss.file.withRegistered(registered{clients: clients, apis: apis})
	if err != nil {
		return err
	}
	return errors.Join(left...)
}

// RegistrationError is why SetRegistered or CheckRegistered leaves out
// one registered client or API resource.
type RegistrationError struct {
	API   bool         // an API resource, ID its Name; false: a client, ID its ClientID
	ID    string       // as given: print it quoted, it may hold anything
	Taken bool         // its ID is another's: a file client's, or an earlier registration's under ASCII case folding
	Err   *ConfigError // the field, named as the file names it without an index, and why
}

func (e *RegistrationError) Error() string { return e.Err.Error() }

// Unwrap returns the ConfigError, so that errors.As finds it.
func (e *RegistrationError) Unwrap() error { return e.Err }

// registered is the last SetRegistered's clients and API resources.
type registered struct {
	clients []ClientConfig
	apis    []APIResourceConfig
}

// fileState is the last Reload's configuration and what it compiled to:
// its clients and API resources, its keys read, nothing applied.
type fileState struct {
	cfg  Config
	st   *state
	sets []keySet
}

// clone returns a copy of c whose slices are its own: the issuer keeps it
// for SetRegistered, whatever the caller does with c afterwards.
func (c *Config) clone() Config {
	d := *c
	d.Clients = slices.Clone(c.Clients)
	d.APIResources = slices.Clone(c.APIResources)
	d.Scopes = slices.Clone(c.Scopes)
	d.Keys = slices.Clone(c.Keys)
	d.TrustedIssuers = slices.Clone(c.TrustedIssuers)
	return d
}

// setsAt returns the key sets of f's schedule from the span current at
// now on, as Reload would compile them at now.
func (f fileState) setsAt(now time.Time) []keySet {
	first := 0
	for first+1 < len(f.sets) && !now.Before(f.sets[first+1].from) {
		first++
	}
	return slices.Clone(f.sets[first:])
}

// withRegistered returns a new state: f's, with r's clients and API
// resources added, each compiled, and the errors of those left out.
// f's own state is not changed. An error is one of the configuration
// itself, which Reload has checked already.
func (f fileState) withRegistered(r registered) (*state, []error, error) {
	if f.st == nil {
		return nil, nil, errors.New("issuer: no configuration yet")
	}
	st := *f.st
	st.roster = &roster{clients: maps.Clone(f.st.clients), apis: maps.Clone(f.st.apis), apiOrder: slices.Clone(f.st.apiOrder), federated: f.st.federated.clone()}
	d := f.cfg.withDefaults()
	k, err := d.compiler()
	if err != nil {
		return nil, nil, err
	}
	var left []error
	taken := takenIDs{}
	for id := range f.st.apis {
		taken.add(id, "an API resource of the configuration file, which wins")
	}
	for _, ac := range r.apis {
		api, err := k.registered(true, ac.Name, ac.PublicKeys, taken, func() (*client, error) {
			a, err := k.api("apiResources", ac)
			if err != nil {
				return nil, err
			}
			st.apis[a.name] = a
			st.apiOrder = append(st.apiOrder, a)
			return a.client, nil
		})
		if api == nil {
			left = append(left, err)
		}
	}
	// A registered client may not outlive what the key schedule allows
	// the file's clients: a key retires no sooner than its last token
	// expires.
	ahead := d.ValidatorRefresh + d.JWKSMaxAge
	var live time.Duration
	for _, cc := range d.Clients {
		live = max(live, cc.AccessTokenLifetime)
	}
	taken = takenIDs{}
	for id := range f.st.clients {
		taken.add(id, "a client of the configuration file, which wins")
	}
	for _, cc := range r.clients {
		at := fmt.Sprintf("clients (%q)", cc.ClientID)
		cl, err := k.registered(false, cc.ClientID, cc.PublicKeys, taken, func() (*client, error) {
			cl, err := k.client("clients", cc)
			if err != nil {
				return nil, err
			}
			if cl.lifetime > live {
				if err := st.plan.validate(ahead, cl.lifetime); err != nil {
					return nil, fieldErr(at+".accessTokenLifetime", "longer than the key schedule allows: %v", err)
				}
				live = cl.lifetime
			}
			if err := st.federated.add(at, cl); err != nil {
				return nil, err
			}
			st.clients[cl.id] = cl
			return cl, nil
		})
		if cl == nil {
			left = append(left, err)
		}
	}
	st.apiAudiences()
	if err := st.padKeys(); err != nil {
		return nil, nil, err
	}
	fc := *st.face // discovery speaks of the roster as a whole
	if fc.discovery, err = st.discoveryDocument(); err != nil {
		return nil, nil, err
	}
	st.face = &fc
	return &st, left, nil
}

// registered compiles one registered client or API resource (api) with
// compile, the path of the file's, after the rules of a registration of
// its own: an ID of printable ASCII, not ".", ".." or "/", not taken under
// ASCII case folding; keys as JWKs, not files. It returns the client, or
// the *RegistrationError of one left out.
func (k *compiler) registered(api bool, id string, kcs []ClientKeyConfig, taken takenIDs, compile func() (*client, error)) (*client, error) {
	list, member := "clients", "clientId"
	if api {
		list, member = "apiResources", "name"
	}
	at := fmt.Sprintf("%s (%q)", list, id)
	left := func(err error, isTaken bool) (*client, error) {
		var ce *ConfigError
		if !errors.As(err, &ce) {
			ce = &ConfigError{Field: at, Reason: err.Error(), Err: err}
		}
		return nil, &RegistrationError{API: api, ID: id, Taken: isTaken, Err: ce}
	}
	if err := checkRegisteredID(id); err != nil {
		return left(fieldErr(at+"."+member, "%v", err), false)
	}
	if why, ok := taken[foldASCII(id)]; ok {
		return left(fieldErr(at+"."+member, "%s", why), true)
	}
	for i, kc := range kcs {
		if kc.File != "" {
			return left(fieldErr(fmt.Sprintf("%s.publicKeys[%d].file", at, i), "a registered key is a JWK: a file would be read from one replica's disk"), false)
		}
	}
	cl, err := compile()
	if err != nil {
		return left(err, false)
	}
	taken.add(id, fmt.Sprintf("registered twice, under ASCII case folding: the first one, %q, is served", id))
	return cl, nil
}

// takenIDs are the IDs of one kind taken, under ASCII case folding, and
// by whom.
type takenIDs map[string]string

func (t takenIDs) add(id, why string) {
	if _, ok := t[foldASCII(id)]; !ok {
		t[foldASCII(id)] = why
	}
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

// A token carries the epoch of its client's registration, and
// introspection answers it active only while the client's epoch is the
// same (stillIssued): a client removed, disabled, or stripped of every
// secret, and then served again, is a new client for the tokens issued
// before. A registry gives each registration its epoch
// (ClientConfig.Epoch); for every other client, the file's above all,
// the issuer keeps a record of its own, here, and in its token store when
// the store is a tokenstore.Epochs, so that the record outlives a restart
// and reaches the replicas that share the store.

// epochClaim is the claim in which a JWT carries its client's epoch,
// when not zero.
const epochClaim = "idsauth_epoch"

// maxEpoch is the largest epoch: a JWT carries it as a JSON number, which
// every JSON reader reads exactly up to 2^53-1 (jws.Claims.Uint53).
const maxEpoch = 1<<53 - 1

// epochTimeout bounds the token store's calls for the record of epochs,
// at a Reload or SetRegistered.
const epochTimeout = 5 * time.Second

// epochs is the issuer's record of the epochs of its clients that the
// configuration gives none: by client ID, zero for one never ended.
type epochs struct {
	known map[string]uint64
	store tokenstore.Epochs // nil: this process's record alone
}

// nextEpoch is the epoch that follows e for client id: the same on every
// replica that ends the client, with nothing shared, and at most 2^53 so
// that any JSON reader reads it exactly.
func nextEpoch(id string, e uint64) uint64 {
	h := sha256.New()
	h.Write([]byte("idsauth epoch\x00"))
	h.Write([]byte(id))
	h.Write(binary.BigEndian.AppendUint64([]byte{0}, e))
	return binary.BigEndian.Uint64(h.Sum(nil))&maxEpoch | 1
}

// renew gives the clients of next whose configuration gives no epoch the
// one the record holds, first ending (a new epoch) each such client of
// old that next no longer serves or serves without any of its secrets.
// The record of an ID is read from the store the first time the ID is
// served, and again for each ID of reread that this call did not end: a
// Reload passes the file's clients, so that a replica that never applied
// a removal another one made (it reloaded the file of after alone)
// takes the epoch the store holds, and the replicas agree again. A
// client whose epoch changes is copied: old's, and the file's compiled
// state, share it. It runs under iss.mu.
func (iss *Issuer) renew(old, next *state, reread []string) {
	e := &iss.epochs
	if e.known == nil {
		e.known = make(map[string]uint64)
		e.store, _ = iss.tokens.(tokenstore.Epochs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), epochTimeout)
	defer cancel()
	ended := map[string]bool{}
	if old != nil {
		for id, was := range old.clients {
			if was.ownEpoch {
				continue
			}
			if now := next.clients[id]; now != nil && !now.ownEpoch && !droppedEverySecret(was, now) {
				continue
			}
			from := e.known[id]
			to := nextEpoch(id, from)
			e.known[id], ended[id] = to, true
			if e.store == nil {
				continue
			}
			if err := e.store.AdvanceEpoch(ctx, id, from, to); err != nil {
				iss.logger.Error("idsauth issuer: the token store cannot record that a client ended: this replica ends its tokens, a replica starting later may not",
					slog.String("client_id", id), slog.String("error", err.Error()))
			}
		}
	}
	var unread []string
	for id, cl := range next.clients {
		if _, ok := e.known[id]; !ok && !cl.ownEpoch {
			unread = append(unread, id)
		}
	}
	for _, id := range reread {
		if _, ok := e.known[id]; ok && !ended[id] && next.clients[id] != nil && !next.clients[id].ownEpoch {
			unread = append(unread, id)
		}
	}
	if len(unread) > 0 && e.store != nil {
		got, err := e.store.Epochs(ctx, unread)
		if err != nil {
			iss.logger.Error("idsauth issuer: the token store cannot tell the epochs of clients: they are read again at the next reload",
				slog.Int("clients", len(unread)), slog.String("error", err.Error()))
			unread = nil
		}
		for i, id := range unread {
			e.known[id] = got[i]
		}
	} else {
		for _, id := range unread {
			e.known[id] = 0
		}
	}
	for id, cl := range next.clients {
		if ep := e.known[id]; !cl.ownEpoch && cl.epoch != ep {
			cp := *cl
			cp.epoch = ep
			next.clients[id] = &cp
		}
	}
}

// droppedEverySecret reports whether now, a client served again, holds
// none of the secrets was had: a secret leaked is replaced so, and the
// tokens it got end with it.
func droppedEverySecret(was, now *client) bool {
	for _, h := range was.hashes {
		for _, k := range now.hashes {
			if h.Equal(k) {
				return false
			}
		}
	}
	return len(was.hashes) > 0
}

// appendEpoch appends cl's epoch claim to a token's claims, when not zero.
func appendEpoch(b []byte, cl *client) []byte {
	if cl.epoch == 0 {
		return b
	}
	b = append(b, `,"`+epochClaim+`":`...)
	return strconv.AppendUint(b, cl.epoch, 10)
}
