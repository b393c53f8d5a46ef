package main

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// maxUsersPerTenant bounds one tenant's users, so one tenant cannot fill
// the memory the others need; the store as a whole holds at most this
// many per tenant ever configured.
const maxUsersPerTenant = 10000

var (
	errTenantFull    = errors.New("this tenant holds the most users this service keeps; delete one first")
	errUserNameTaken = errors.New("userName is already taken")
	errNoUser        = errors.New("no user with that id")
)

// scimStore holds SCIM users per tenant. Its methods take its lock;
// callers never do. A stored *scimUser is never modified (replace stores
// a new one), so the copies its methods return may share its slices.
type scimStore struct {
	mu      sync.Mutex
	max     int // users per tenant
	seq     uint64
	tenants map[string]*tenantUsers
}

// tenantUsers are one tenant's users, by ID and by folded userName, so
// that both look-ups are O(1), and in creation order, so that a page is
// cut without sorting.
type tenantUsers struct {
	byID   map[string]*scimUser
	byName map[string]string // foldUserName(userName) → ID
	order  []*scimUser       // ascending seq
}

func newSCIMStore(maxPerTenant int) *scimStore {
	return &scimStore{max: maxPerTenant, tenants: map[string]*tenantUsers{}}
}

// create stores u, whose ID the caller has chosen, in tenant.
func (s *scimStore) create(tenant string, u *scimUser) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenants[tenant]
	if t == nil {
		t = &tenantUsers{byID: map[string]*scimUser{}, byName: map[string]string{}}
		s.tenants[tenant] = t
	}
	name := foldUserName(u.UserName)
	if _, taken := t.byName[name]; taken {
		return errUserNameTaken
	}
	if len(t.byID) >= s.max {
		return errTenantFull
	}
	s.seq++
	u.seq = s.seq
	t.byID[u.ID] = u
	t.byName[name] = u.ID
	t.order = append(t.order, u)
	return nil
}

// get returns a copy of tenant's user id.
func (s *scimStore) get(tenant, id string) (scimUser, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.tenants[tenant].lookup(id)
	if !ok {
		return scimUser{}, false
	}
	return *u, true
}

// byUserName returns a copy of tenant's user whose userName equals name
// without regard to case.
func (s *scimStore) byUserName(tenant, name string) (scimUser, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenants[tenant]
	if t == nil {
		return scimUser{}, false
	}
	u, ok := t.lookup(t.byName[foldUserName(name)])
	if !ok {
		return scimUser{}, false
	}
	return *u, true
}

// replace puts build(old) in the place of tenant's user id, with the old
// user's ID and creation order. build runs under the lock, so the old
// user it sees is the one it replaces.
func (s *scimStore) replace(tenant, id string, build func(old scimUser) *scimUser) (scimUser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenants[tenant]
	old, ok := t.lookup(id)
	if !ok {
		return scimUser{}, errNoUser
	}
	next := build(*old)
	oldName, name := foldUserName(old.UserName), foldUserName(next.UserName)
	if other, taken := t.byName[name]; taken && other != id {
		return scimUser{}, errUserNameTaken
	}
	next.ID, next.seq = id, old.seq
	delete(t.byName, oldName)
	t.byName[name] = id
	t.byID[id] = next
	t.order[t.position(old)] = next
	return *next, nil
}

// delete removes tenant's user id and reports whether it was there.
func (s *scimStore) delete(tenant, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenants[tenant]
	u, ok := t.lookup(id)
	if !ok {
		return false
	}
	delete(t.byName, foldUserName(u.UserName))
	delete(t.byID, id)
	i := t.position(u)
	t.order = slices.Delete(t.order, i, i+1)
	return true
}

// page returns how many users tenant has and copies of those in window p,
// in the order they were created.
func (s *scimStore) page(tenant string, p scimPage) (total int, users []scimUser) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenants[tenant]
	if t == nil {
		return 0, []scimUser{}
	}
	from, to := p.window(len(t.order))
	users = make([]scimUser, 0, to-from)
	for _, u := range t.order[from:to] {
		users = append(users, *u)
	}
	return len(t.order), users
}

// position finds u in t.order by its creation number.
func (t *tenantUsers) position(u *scimUser) int {
	i, _ := slices.BinarySearchFunc(t.order, u.seq, func(v *scimUser, seq uint64) int { return cmp.Compare(v.seq, seq) })
	return i
}

// lookup is a nil-safe read of t.byID.
func (t *tenantUsers) lookup(id string) (*scimUser, bool) {
	if t == nil {
		return nil, false
	}
	u, ok := t.byID[id]
	return u, ok
}

// foldUserName maps a userName to a key that two names share exactly when
// strings.EqualFold says they are equal (RFC 7643 §4.1.1: userName is
// caseExact false): each rune becomes the smallest rune of its
// unicode.SimpleFold orbit, the same classes EqualFold compares by. Invalid
// UTF-8 bytes become U+FFFD, as EqualFold decodes them.
func foldUserName(name string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, name)
}
