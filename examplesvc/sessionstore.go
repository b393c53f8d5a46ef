package main

import (
	"container/list"
	"crypto/rand"
	"errors"
	"sync"
	"time"
)

const (
	// sessionLifetime is how long a session lives after its last use.
	sessionLifetime = time.Hour
	// maxSessionsPerClient bounds the live sessions of one client, so one
	// client cannot take every slot from the others; the store as a whole
	// holds at most this many per configured client.
	maxSessionsPerClient = 1000
)

// errTooManySessions is returned by create when the client already has
// maxSessionsPerClient live sessions.
var errTooManySessions = errors.New("this client has the most live sessions allowed; delete one or let one expire")

type session struct {
	ID         string    `json:"sessionId"`
	DataSource string    `json:"datasourceId"`
	Created    time.Time `json:"created"`
	ExpiresAt  time.Time `json:"expiresAt"`
	owner      string
}

// sessionStore holds the Connect sessions. Its methods take its lock;
// callers never do. Sessions are kept in a map by ID and in one list in
// order of last use, which is also the order of expiry, so look-ups are
// O(1) and dropping expired sessions only ever looks at the list's front.
type sessionStore struct {
	mu      sync.Mutex
	now     func() time.Time
	max     int                      // live sessions per owner
	byID    map[string]*list.Element // its Value is a *session
	byUse   *list.List               // least recently used first
	byOwner map[string]int           // live sessions per owner
}

func newSessionStore(maxPerClient int) *sessionStore {
	return &sessionStore{
		now:     time.Now,
		max:     maxPerClient,
		byID:    map[string]*list.Element{},
		byUse:   list.New(),
		byOwner: map[string]int{},
	}
}

// create starts a session of owner on data source ds.
func (s *sessionStore) create(owner, ds string) (session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.dropExpired(now)
	if s.byOwner[owner] >= s.max {
		return session{}, errTooManySessions
	}
	sess := &session{ID: rand.Text(), DataSource: ds, Created: now, ExpiresAt: now.Add(sessionLifetime), owner: owner}
	s.byID[sess.ID] = s.byUse.PushBack(sess)
	s.byOwner[owner]++
	return *sess, nil
}

// use returns a copy of the live session id of owner, renewed.
func (s *sessionStore) use(id, owner string) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.dropExpired(now)
	e, ok := s.live(id, owner, now)
	if !ok {
		return session{}, false
	}
	sess := e.Value.(*session)
	sess.ExpiresAt = now.Add(sessionLifetime)
	s.byUse.MoveToBack(e)
	return *sess, true
}

// end deletes the live session id of owner on data source ds, and
// reports whether there was one.
func (s *sessionStore) end(id, owner, ds string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.dropExpired(now)
	e, ok := s.live(id, owner, now)
	if !ok || e.Value.(*session).DataSource != ds {
		return false
	}
	s.remove(e)
	return true
}

// len returns how many sessions the store holds.
func (s *sessionStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// live finds session id of owner if it has not expired. An expired one
// is dropped here too, in case the clock went back and the list's order
// hid it from dropExpired.
func (s *sessionStore) live(id, owner string, now time.Time) (*list.Element, bool) {
	e, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	sess := e.Value.(*session)
	if now.After(sess.ExpiresAt) {
		s.remove(e)
		return nil, false
	}
	return e, sess.owner == owner
}

// dropExpired removes expired sessions from the front of the use order;
// each session is removed once, so the cost is O(1) amortized.
func (s *sessionStore) dropExpired(now time.Time) {
	for e := s.byUse.Front(); e != nil && now.After(e.Value.(*session).ExpiresAt); e = s.byUse.Front() {
		s.remove(e)
	}
}

func (s *sessionStore) remove(e *list.Element) {
	sess := s.byUse.Remove(e).(*session)
	delete(s.byID, sess.ID)
	if s.byOwner[sess.owner]--; s.byOwner[sess.owner] == 0 {
		delete(s.byOwner, sess.owner)
	}
}
