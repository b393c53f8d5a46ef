package issuer

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
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
// every client it holds when it loads them whole, and UpdateRegistered
// with each change. It swaps them in as Reload swaps a configuration: at
// once, for every request that starts after it returns, and
// introspection answers about the tokens of a client no longer given
// (removed or disabled) as about a removed client's: inactive, and for
// good once the client is given again with another Epoch. Reload keeps
// them, checked against the new configuration. No request waits on the
// registry: what the issuer serves is what it was last given.
//
// Each is checked and compiled by the very code that compiles the file's,
// with the configuration's defaults (the issuer URL's audience, its own
// scopes, its mutual TLS CAs, its profile), and kept as its registration
// in a table the garbage collector need not scan, compiled again at its
// first use. One that does not fit is left out, and the others applied:
// one whose ID is not printable ASCII (U+0021 to U+007E) or is ".", ".."
// or "/", one whose ID is a configuration file's client's or, under ASCII
// case folding, an earlier one's (the file's wins, then the first), one
// that names a key file (a registered client's keys are JWKs: a file
// would be on one replica's disk), one whose AccessTokenLifetime outlives
// what the key schedule allows, or any other field the file would
// refuse. The error joins one *RegistrationError for each left out, whose
// ConfigError's Field names the field as the file would, without an
// index: `clients ("reporting").scopes[0]`, `apiResources
// ("reports-api").name`. Nil: all of them are served. A Reload tries
// those left out again.
//
// A registered client's secret hashes are checked at every call, as a
// reload checks the file's: a bcrypt hash costs one bcrypt check each
// time (see package secret), so a registry should hold fast hashes.
func (iss *Issuer) SetRegistered(clients []ClientConfig, apis []APIResourceConfig) error {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	st, left, out, err := iss.build(iss.file, clients, slices.Clone(apis), nil)
	if err != nil {
		return err
	}
	now := iss.now()
	iss.apply(st, iss.file.setsAt(now), now)
	iss.registeredAPIs, iss.leftOut = slices.Clone(apis), out
	return errors.Join(left...)
}

// UpdateRegistered applies a change of the registered clients, as
// SetRegistered applies a whole set: clients are registered (or replace
// the registration of their ID), and the registrations of the IDs of
// removed end. It costs what the change holds, whatever the number of
// clients the issuer serves. Its error is SetRegistered's, of the
// clients given that it leaves out; a removed ID that is no registered
// client's changes nothing.
func (iss *Issuer) UpdateRegistered(clients []ClientConfig, removed []string) error {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	st, left, err := iss.update(iss.st.Load(), clients, removed, true)
	if err != nil {
		return err
	}
	now := iss.now()
	iss.apply(st, iss.file.setsAt(now), now)
	// What this change left out is tried again at the next Reload, as
	// SetRegistered's; what it gives or removes is not left out any more.
	changed := map[string]bool{}
	for _, cc := range clients {
		changed[cc.ClientID] = true
	}
	for _, id := range removed {
		changed[id] = true
	}
	iss.leftOut = slices.DeleteFunc(iss.leftOut, func(cc ClientConfig) bool { return changed[cc.ClientID] })
	for _, err := range left {
		var re *RegistrationError
		if errors.As(err, &re) && !re.API {
			for _, cc := range clients {
				if cc.ClientID == re.ID {
					iss.leftOut = append(iss.leftOut, cc)
				}
			}
		}
	}
	return errors.Join(left...)
}

// CheckRegistered checks clients and apis as UpdateRegistered and
// SetRegistered would, beside the clients and API resources the issuer
// serves now, and returns the same error, without applying them: an
// administration API asks it before it stores a change. A client of the
// ID of a registered one is checked as its replacement.
func (iss *Issuer) CheckRegistered(clients []ClientConfig, apis []APIResourceConfig) error {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	cur := iss.st.Load()
	if cur == nil {
		return errors.New("issuer: no configuration yet")
	}
	var left []error
	taken := takenIDs{}
	for name := range cur.apis {
		taken.add(name, "an API resource, which is served")
	}
	for _, ac := range apis {
		if _, err := cur.k.registered(true, ac.Name, ac.PublicKeys, taken.lookup, func() (*client, error) {
			a, err := cur.k.api("apiResources", ac)
			if err != nil {
				return nil, err
			}
			return a.client, nil
		}); err != nil {
			left = append(left, err)
		}
	}
	_, more, err := iss.update(cur, clients, nil, false)
	if err != nil {
		return err
	}
	left = append(left, more...)
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

// build returns the state of f with the registered clients regs and API
// resources apis added, each checked and compiled, the errors of those
// left out and those clients; the table is made whole. An error is one
// of the configuration itself, which Reload has checked.
func (iss *Issuer) build(f fileState, regs []ClientConfig, apis []APIResourceConfig, reread []string) (*state, []error, []ClientConfig, error) {
	if f.st == nil {
		return nil, nil, nil, errors.New("issuer: no configuration yet")
	}
	k := f.st.k
	st := *f.st
	r := &roster{files: f.st.files, apis: maps.Clone(f.st.apis), apiOrder: slices.Clone(f.st.apiOrder), k: k, federated: f.st.federated.clone()}
	var err error
	if r.tally, err = newTally(); err != nil {
		return nil, nil, nil, err
	}
	var left []error
	var out []ClientConfig // the registered clients left out
	taken := takenIDs{}
	for name, api := range f.st.apis {
		taken.add(name, "an API resource of the configuration file, which wins")
		if err := r.tally.add(api.client); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, ac := range apis {
		_, err := k.registered(true, ac.Name, ac.PublicKeys, taken.lookup, func() (*client, error) {
			a, err := k.api("apiResources", ac)
			if err != nil {
				return nil, err
			}
			r.apis[a.name] = a
			r.apiOrder = append(r.apiOrder, a)
			return a.client, r.tally.add(a.client)
		})
		if err != nil {
			left = append(left, err)
		}
	}
	taken = make(takenIDs, len(f.st.files)+len(regs))
	now := map[string][]string{} // the clients without an epoch of their own, by their hashes
	// An entry of its own epoch is encoded at once; the others once the
	// issuer's record of their epochs is known.
	puts := make([]tableEntry, 0, len(f.st.files)+len(regs))
	var entries []entry
	var b entryBodies
	keep := func(e *entry) error {
		if e.Config.Epoch == 0 {
			now[e.Config.ClientID] = e.Config.SecretHashes
			if entries == nil {
				entries = make([]entry, 0, len(f.st.files)+len(regs))
			}
			entries = append(entries, *e)
			return nil
		}
		te, err := b.encode(e)
		puts = append(puts, te)
		return err
	}
	for _, fc := range f.st.files {
		taken.add(fc.cc.ClientID, "a client of the configuration file, which wins")
		e, err := fc.cl.entryOf(fc.cc, true)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := r.tally.add(fc.cl); err != nil {
			return nil, nil, nil, err
		}
		if err := keep(&e); err != nil {
			return nil, nil, nil, err
		}
	}
	life := f.lifetimes()
	for i := range regs {
		e, cl, err := iss.admit(&st, r, regs[i], taken.lookup, &life)
		if err != nil {
			left = append(left, err)
			out = append(out, regs[i])
			continue
		}
		r.federated.insert(cl)
		taken.add(e.Config.ClientID, "")
		if err := keep(&e); err != nil {
			return nil, nil, nil, err
		}
	}
	was := map[string][]string{}
	if old := iss.st.Load(); old != nil {
		old.table.each(func(id []byte, flags byte, body []byte) bool {
			if flags&flagOwnEpoch == 0 {
				if e, err := decodeEntry(body); err == nil {
					was[string(id)] = e.Config.SecretHashes
				}
			}
			return true
		})
	}
	known := iss.recordEpochs(ended(was, now), slices.Collect(maps.Keys(now)), reread)
	for i := range entries {
		e := &entries[i]
		e.Epoch = known[e.Config.ClientID]
		te, err := b.encode(e)
		if err != nil {
			return nil, nil, nil, err
		}
		puts = append(puts, te)
	}
	r.table = (*table)(nil).with(puts, nil)
	st.roster = r
	if err := st.speak(); err != nil {
		return nil, nil, nil, err
	}
	return &st, left, out, nil
}

// update returns the state of cur with clients registered (or replacing
// the registrations of their IDs) and the registrations of removed
// ended: only the table's shards they fall in are made anew. Without
// apply it only checks: it records no epoch, and makes no state.
func (iss *Issuer) update(cur *state, clients []ClientConfig, removed []string, apply bool) (*state, []error, error) {
	st := *cur
	r := *cur.roster
	r.tally = cur.tally.clone()
	var left []error
	was, now := map[string][]string{}, map[string][]string{}
	fed := func() *credIndex { // r's index of federated credentials, cur's until it changes
		if r.federated == cur.federated {
			r.federated = cur.federated.clone()
		}
		return r.federated
	}
	gone := func(id string) bool { // a registered client's old entry ends: its epoch, its credentials
		s, i, ok := cur.table.find(id)
		if !ok {
			return false
		}
		if flags, _, _ := s.head(i); flags&flagFile != 0 {
			return false
		}
		e, err := s.entryAt(i)
		if err == nil && e.Config.Epoch == 0 {
			was[id] = e.Config.SecretHashes
		}
		if err == nil && len(e.Config.FederatedCredentials) > 0 {
			if old := cur.client(id); old != nil {
				fed().remove(old)
			}
		}
		return true
	}
	var drop []string
	for _, id := range removed {
		if gone(id) {
			drop = append(drop, id)
		}
	}
	local := takenIDs{}
	takenBy := func(id string) (string, bool) {
		if why, ok := local.lookup(id); ok {
			return why, true
		}
		switch other, file, ok := cur.table.folded(id); {
		case !ok, other == id && !file:
			return "", false // free, or its own registration it replaces
		case file:
			return "a client of the configuration file, which wins", true
		default:
			return twice(other), true
		}
	}
	life := iss.file.lifetimes()
	var entries []entry
	for _, cc := range clients {
		e, cl, err := iss.admit(&st, &r, cc, takenBy, &life)
		if err != nil {
			left = append(left, err)
			continue
		}
		local.add(cc.ClientID, "")
		gone(cc.ClientID)
		if len(cl.federated) > 0 {
			fed().insert(cl)
		}
		if cc.Epoch == 0 {
			now[cc.ClientID] = cc.SecretHashes
		}
		entries = append(entries, e)
	}
	if !apply {
		return nil, left, nil
	}
	known := iss.recordEpochs(ended(was, now), slices.Collect(maps.Keys(now)), nil)
	puts := make([]tableEntry, len(entries))
	var b entryBodies
	for i := range entries {
		e := &entries[i]
		if e.Config.Epoch == 0 {
			e.Epoch = known[e.Config.ClientID]
		}
		var err error
		if puts[i], err = b.encode(e); err != nil {
			return nil, nil, err
		}
	}
	r.table = cur.table.with(puts, drop)
	st.roster = &r
	if r.tally.mtls != cur.tally.mtls {
		if err := st.speak(); err != nil {
			return nil, nil, err
		}
	}
	return &st, left, nil
}

// admit checks one registered client, cc, by the rules of a registration
// (registered) and the file's path (compile), its lifetime against the
// key schedule (life: the longest lifetime the schedule has been checked
// for), and its federated credentials against r's, and tallies it in r:
// its entry and the client compiled, or its *RegistrationError.
func (iss *Issuer) admit(st *state, r *roster, cc ClientConfig, takenBy func(string) (string, bool), life *time.Duration) (entry, *client, error) {
	k := r.k
	cl, err := k.registered(false, cc.ClientID, cc.PublicKeys, takenBy, func() (*client, error) {
		cl, err := k.client("clients", cc)
		if err != nil {
			return nil, err
		}
		if cl.lifetime > *life {
			if err := st.plan.validate(k.d.ValidatorRefresh+k.d.JWKSMaxAge, cl.lifetime); err != nil {
				return nil, fieldErr(fmt.Sprintf("clients (%q).accessTokenLifetime", cc.ClientID), "longer than the key schedule allows: %v", err)
			}
			*life = cl.lifetime
		}
		if err := r.federated.check("clients", cl); err != nil {
			return nil, named(err, "clients", cc.ClientID)
		}
		return cl, r.tally.add(cl)
	})
	if err != nil {
		return entry{}, nil, err
	}
	e, err := cl.entryOf(cc, false)
	return e, cl, err
}

// lifetimes is the longest lifetime of f's clients: a registered client
// may not outlive what the key schedule allows them, since a key retires
// no sooner than its last token expires.
func (f fileState) lifetimes() time.Duration {
	var live time.Duration
	for _, fc := range f.st.files {
		live = max(live, fc.cl.lifetime)
	}
	return live
}

// speak writes st's discovery document anew, of its roster as a whole.
func (st *state) speak() error {
	fc := *st.face
	var err error
	if fc.discovery, err = st.discoveryDocument(); err != nil {
		return err
	}
	st.face = &fc
	return nil
}

// Registered returns how many registered clients and API resources the
// issuer serves now, beside the configuration file's, and how many of
// the clients given by SetRegistered and UpdateRegistered it leaves out.
func (iss *Issuer) Registered() (clients, apis, left int) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	st := iss.st.Load()
	if st == nil || iss.file.st == nil {
		return 0, 0, 0
	}
	return st.table.n - len(iss.file.st.files), len(st.apis) - len(iss.file.st.apis), len(iss.leftOut)
}
