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
// every client it holds, each time they change. It swaps them in as
// Reload swaps a configuration: at once, for every request that starts
// after it returns, and introspection answers about the tokens of a
// client no longer given (removed or disabled) as about a removed
// client's: inactive. Reload keeps them, checked against the new
// configuration. No request waits on the registry: what the issuer
// serves is what it was last given.
//
// Each is checked and compiled as the file's are, with the
// configuration's defaults (the issuer URL's audience, its own scopes,
// its profile). One that does not fit is left out, and the others
// applied: a client whose ID is a configuration file's client's (the
// file's wins), one named twice (the first wins), one that names a key
// file (a registered client's keys are JWKs: a file would be on one
// replica's disk), one whose AccessTokenLifetime outlives what the key
// schedule allows, or any other field the file would refuse. The error
// joins one *ConfigError for each left out, whose Field names it as the
// file would, without an index: `clients ("reporting").scopes[0]`,
// `apiResources ("reports-api").name`. Nil: all of them are served.
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
	st.clients = maps.Clone(f.st.clients)
	st.apis = maps.Clone(f.st.apis)
	st.apiOrder = slices.Clone(f.st.apiOrder)
	d := f.cfg.withDefaults()
	own, err := checkOwnScopes(d.Scopes)
	if err != nil {
		return nil, nil, err
	}
	var left []error
	for _, ac := range r.apis {
		at := fmt.Sprintf("apiResources (%q)", ac.Name)
		if err := registeredKeys(at, ac.PublicKeys); err != nil {
			left = append(left, err)
			continue
		}
		api, err := ac.compile("apiResources", own)
		switch {
		case err != nil:
			left = append(left, err)
		case f.st.apis[api.name] != nil:
			left = append(left, fieldErr(at+".name", "an API resource of the configuration file, which wins"))
		case st.apis[api.name] != nil:
			left = append(left, fieldErr(at+".name", "registered twice: the first one is served"))
		default:
			st.apis[api.name] = api
			st.apiOrder = append(st.apiOrder, api)
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
	for _, cc := range r.clients {
		at := fmt.Sprintf("clients (%q)", cc.ClientID)
		if err := registeredKeys(at, cc.PublicKeys); err != nil {
			left = append(left, err)
			continue
		}
		cl, err := d.clientDefaults(cc).compile("clients", own)
		if err != nil {
			left = append(left, err)
			continue
		}
		if cl.lifetime > live {
			if err := st.plan.check(ahead, cl.lifetime); err != nil {
				left = append(left, fieldErr(at+".accessTokenLifetime", "longer than the key schedule allows: %v", err))
				continue
			}
			live = cl.lifetime
		}
		switch {
		case f.st.clients[cl.id] != nil:
			left = append(left, fieldErr(at+".clientId", "a client of the configuration file, which wins"))
		case st.clients[cl.id] != nil:
			left = append(left, fieldErr(at+".clientId", "registered twice: the first one is served"))
		default:
			cl.defaultAud = len(cc.Audience) == 0
			st.clients[cl.id] = cl
		}
	}
	st.apiAudiences()
	if err := st.padKeys(); err != nil {
		return nil, nil, err
	}
	return &st, left, nil
}

// registeredKeys refuses a registered key given as a file: a file is on
// one replica's disk, and a registry's clients are the same on all.
func registeredKeys(f string, kcs []ClientKeyConfig) error {
	for i, kc := range kcs {
		if kc.File != "" {
			return fieldErr(fmt.Sprintf("%s.publicKeys[%d].file", f, i), "a registered key is a JWK: a file would be read from one replica's disk")
		}
	}
	return nil
}
