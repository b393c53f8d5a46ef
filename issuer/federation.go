package issuer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Federated credentials: a client authenticated by a workload's token
// from a trusted issuer (trust_config.go), and the one map from a
// workload identity to the client it authenticates, in which no identity
// names two clients.

// federatedCred is a checked FederatedCredential.
type federatedCred struct {
	issuer  string // the trusted issuer's id
	subject string // exact; for a prefix, the SPIFFE ID with its "/" and without the "*"
	prefix  bool   // a SPIFFE ID's "/*": every ID under subject
}

// String is the credential as the configuration writes it, for the log
// and the events.
func (c federatedCred) String() string {
	s := c.subject
	if c.prefix {
		s += "*"
	}
	return c.issuer + " " + s
}

// federation checks the fields of cc that say how a workload or a key
// set of its own authenticates it (JWKSURI, FederatedCredentials,
// MaxAssertionAge, AllowDefaultServiceAccount), f naming it, into cl.
func (k *compiler) federation(f string, cc ClientConfig, cl *client) error {
	if cc.JWKSURI != "" {
		if len(cc.PublicKeys) > 0 {
			return fieldErr(f+".jwksUri", "set jwksUri or publicKeys, not both (RFC 7591 §2)")
		}
		if err := checkFetchURL(cc.JWKSURI, k.trust.loopJWK); err != nil {
			return fieldErr(f+".jwksUri", "%v", err)
		}
		cl.jwksURI = cc.JWKSURI
	}
	if err := validateSeconds(f, "maxAssertionAgeSeconds", cc.MaxAssertionAge); err != nil {
		return err
	}
	if cc.MaxAssertionAge > 24*time.Hour {
		return fieldErr(f+".maxAssertionAgeSeconds", "at most 86400 (a day)")
	}
	cl.maxAssertionAge = cc.MaxAssertionAge
	if cl.maxAssertionAge == 0 {
		cl.maxAssertionAge = defaultAssertionAge
	}
	cl.defaultAccount = cc.AllowDefaultServiceAccount
	cl.jwtBearer = slices.Contains(cc.GrantTypes, jwtBearerGrant)
	if len(cc.FederatedCredentials) > maxFederatedCredentials {
		return fieldErr(f+".federatedCredentials", "more than %d", maxFederatedCredentials)
	}
	for i, fc := range cc.FederatedCredentials {
		at := fmt.Sprintf("%s.federatedCredentials[%d]", f, i)
		c, err := k.trust.credential(fc, cc.AllowDefaultServiceAccount)
		if err != nil {
			return fieldErr(at, "%v", err)
		}
		for _, o := range cl.federated {
			if o == c {
				return fieldErr(at, "listed twice")
			}
		}
		cl.federated = append(cl.federated, c)
	}
	return nil
}

// credential checks fc against the trusted issuers of t.
func (t *trust) credential(fc FederatedCredential, defaultAccount bool) (federatedCred, error) {
	var none federatedCred
	sub := fc.Subject
	switch {
	case sub == "":
		return none, fmt.Errorf("subject: empty")
	case len(sub) > maxSubjectLength:
		return none, fmt.Errorf("subject: more than %d bytes", maxSubjectLength)
	case strings.ContainsFunc(sub, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return none, fmt.Errorf("subject: a control character")
	}
	id := fc.Issuer
	if id == "" && strings.HasPrefix(sub, "spiffe://") {
		td, _, _ := strings.Cut(strings.TrimPrefix(sub, "spiffe://"), "/")
		id = "spiffe://" + td
	}
	ti := t.byID[id]
	switch {
	case id == "":
		return none, fmt.Errorf("issuer: required for a subject that is no SPIFFE ID")
	case ti == nil:
		return none, fmt.Errorf("issuer: %q is no trusted issuer (trustedIssuers: an issuer URL, or spiffe:// and a trust domain)", id)
	}
	c := federatedCred{issuer: ti.id, subject: sub}
	switch ti.kind {
	case kindSPIFFE:
		whole := sub
		if base, ok := strings.CutSuffix(sub, "/*"); ok {
			whole, c.subject, c.prefix = base, base+"/", true
		}
		td, _, err := splitSPIFFEID(whole)
		switch {
		case err != nil:
			return none, fmt.Errorf("subject: %v (a prefix ends in \"/*\", nothing else is a pattern)", err)
		case td != ti.trustDomain:
			return none, fmt.Errorf("subject: of the trust domain %q, not the issuer's %q: a bundle signs for its own trust domain alone", td, ti.trustDomain)
		}
	case kindKubernetes:
		ns, name, err := serviceAccount(sub)
		if err != nil {
			return none, fmt.Errorf("subject: %v", err)
		}
		if name == "default" && !defaultAccount {
			return none, fmt.Errorf("subject: the service account \"default\" of the namespace %q, which every pod without an account of its own runs as: set allowDefaultServiceAccount to mean it", ns)
		}
	default:
		if strings.HasSuffix(sub, "*") {
			return none, fmt.Errorf("subject: %q ends in \"*\", which would match nothing but itself: subjects are exact", sub)
		}
	}
	return c, nil
}

// serviceAccount reads a Kubernetes service account's subject,
// system:serviceaccount:NAMESPACE:NAME.
func serviceAccount(sub string) (ns, name string, err error) {
	rest, ok := strings.CutPrefix(sub, "system:serviceaccount:")
	ns, name, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || ns == "" || name == "" || strings.Contains(name, ":") {
		return "", "", fmt.Errorf("want system:serviceaccount:NAMESPACE:NAME, got %q", sub)
	}
	return ns, name, nil
}

// credKey is a workload identity in the index: a trusted issuer's id and
// a subject (for a prefix, ending in "/").
type credKey struct{ issuer, subject string }

// credIndex maps each workload identity of the roster's federated
// credentials to the one client it authenticates. No identity names two
// clients: an exact subject, and a prefix over it, are one identity
// twice, as two prefixes of which one holds the other are.
type credIndex struct {
	exact  map[credKey]string // exact subjects, to client IDs
	prefix map[credKey]string // prefixes ("spiffe://td/path/"), to client IDs
	under  map[credKey]int    // for each prefix, how many subjects and prefixes lie under it
}

func newCredIndex() *credIndex {
	return &credIndex{exact: map[credKey]string{}, prefix: map[credKey]string{}, under: map[credKey]int{}}
}

// clone returns a copy of x, for a roster made anew.
func (x *credIndex) clone() *credIndex {
	return &credIndex{exact: maps.Clone(x.exact), prefix: maps.Clone(x.prefix), under: maps.Clone(x.under)}
}

// add adds cl's federated credentials, f naming cl, or refuses them all
// when one names an identity another client's names.
func (x *credIndex) add(f string, cl *client) error {
	if err := x.check(f, cl); err != nil {
		return err
	}
	x.insert(cl)
	return nil
}

// check refuses cl's federated credentials, f naming cl, when one names
// an identity another client's names (not cl's own registration, which
// cl replaces).
func (x *credIndex) check(f string, cl *client) error {
	for i, c := range cl.federated {
		if other := x.clash(c); other != "" && other != cl.id {
			return fieldErr(fmt.Sprintf("%s.federatedCredentials[%d]", f, i), "%s is client %q's too: one workload identity authenticates one client", c, other)
		}
	}
	return nil
}

// insert adds cl's federated credentials, checked.
func (x *credIndex) insert(cl *client) {
	for _, c := range cl.federated {
		k := credKey{c.issuer, c.subject}
		if c.prefix {
			x.prefix[k] = cl.id
		} else {
			x.exact[k] = cl.id
		}
		for a := range ancestors(c.subject) {
			x.under[credKey{c.issuer, a}]++
		}
	}
}

// remove takes out the federated credentials of cl, a registration that
// ends or is replaced.
func (x *credIndex) remove(cl *client) {
	for _, c := range cl.federated {
		k := credKey{c.issuer, c.subject}
		m := x.exact
		if c.prefix {
			m = x.prefix
		}
		if m[k] != cl.id {
			continue
		}
		delete(m, k)
		for a := range ancestors(c.subject) {
			if ak := (credKey{c.issuer, a}); x.under[ak] > 1 {
				x.under[ak]--
			} else {
				delete(x.under, ak)
			}
		}
	}
}

// clash returns the client whose credential names c's identity, or "".
func (x *credIndex) clash(c federatedCred) string {
	k := credKey{c.issuer, c.subject}
	if c.prefix {
		if id := x.prefix[k]; id != "" {
			return id
		}
		if x.under[k] > 0 {
			for ek, id := range x.exact { // rare: an error's message
				if ek.issuer == c.issuer && strings.HasPrefix(ek.subject, c.subject) {
					return id
				}
			}
			for pk, id := range x.prefix {
				if pk.issuer == c.issuer && strings.HasPrefix(pk.subject, c.subject) {
					return id
				}
			}
		}
	} else if id := x.exact[k]; id != "" {
		return id
	}
	for a := range ancestors(c.subject) {
		if id := x.prefix[credKey{c.issuer, a}]; id != "" {
			return id
		}
	}
	return ""
}

// lookup returns the client that a token of issuer id with subject sub
// authenticates, and the credential that says so; "" for none.
func (x *credIndex) lookup(id, sub string) (string, federatedCred) {
	if cl := x.exact[credKey{id, sub}]; cl != "" {
		return cl, federatedCred{issuer: id, subject: sub}
	}
	if !strings.HasPrefix(sub, "spiffe://") {
		return "", federatedCred{}
	}
	for a := range ancestors(sub) {
		if cl := x.prefix[credKey{id, a}]; cl != "" {
			return cl, federatedCred{issuer: id, subject: a, prefix: true}
		}
	}
	return "", federatedCred{}
}

// ancestors yields the prefixes that lie over a SPIFFE ID or a prefix,
// the nearest first: "spiffe://td/a/", then "spiffe://td/", for
// "spiffe://td/a/b" and for "spiffe://td/a/b/". Nothing for a subject
// that is no SPIFFE ID.
func ancestors(sub string) func(func(string) bool) {
	return func(yield func(string) bool) {
		rest, ok := strings.CutPrefix(sub, "spiffe://")
		if !ok {
			return
		}
		root := len("spiffe://") + strings.IndexByte(rest+"/", '/') // the "/" after the trust domain
		end := len(sub)
		if strings.HasSuffix(sub, "/") {
			end--
		}
		for i := strings.LastIndexByte(sub[:end], '/'); i >= root; i = strings.LastIndexByte(sub[:i], '/') {
			if !yield(sub[:i+1]) {
				return
			}
		}
	}
}
