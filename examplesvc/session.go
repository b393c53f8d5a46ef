package main

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"github.com/idsauth/idsauth/middleware"
)

// The Connect Session API: a session lives one hour from its last use;
// each call renews it. A session belongs to the client that made it.

const sessionLifetime = time.Hour

type session struct {
	ID         string    `json:"sessionId"`
	DataSource string    `json:"datasourceId"`
	Created    time.Time `json:"created"`
	ExpiresAt  time.Time `json:"expiresAt"`
	owner      string
}

type sessionStore struct {
	mu       sync.Mutex
	sessions map[string]*session
	now      func() time.Time
}

func newSessionStore() *sessionStore {
	return &sessionStore{sessions: map[string]*session{}, now: time.Now}
}

// use returns a copy of the live session id of owner, renewed; expired
// sessions are dropped on the way.
func (s *sessionStore) use(id, owner string) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.sessions {
		if now.After(v.ExpiresAt) {
			delete(s.sessions, k)
		}
	}
	v, ok := s.sessions[id]
	if !ok || v.owner != owner {
		return session{}, false
	}
	v.ExpiresAt = now.Add(sessionLifetime)
	return *v, true
}

func (s *service) createSession(w http.ResponseWriter, r *http.Request) {
	ds := r.PathValue("datasourceId")
	if _, ok := s.admin.users[ds]; !ok {
		problem(w, http.StatusNotFound, "unknown data source")
		return
	}
	c, _ := middleware.ClaimsFrom(r.Context())
	var b [16]byte
	_, _ = rand.Read(b[:])
	st := s.sessions
	st.mu.Lock()
	now := st.now()
	sess := &session{ID: base64.RawURLEncoding.EncodeToString(b[:]), DataSource: ds, Created: now, ExpiresAt: now.Add(sessionLifetime), owner: c.ClientID}
	st.sessions[sess.ID] = sess
	out := *sess
	st.mu.Unlock()
	w.Header().Set("Location", r.URL.Path+"/"+sess.ID)
	writeJSON(w, http.StatusCreated, out)
}

func (s *service) getSession(w http.ResponseWriter, r *http.Request) {
	c, _ := middleware.ClaimsFrom(r.Context())
	sess, ok := s.sessions.use(r.PathValue("sessionId"), c.ClientID)
	if !ok || sess.DataSource != r.PathValue("datasourceId") {
		problem(w, http.StatusNotFound, "no such session, or it has expired")
		return
	}
	writeJSON(w, http.StatusOK, sess)
}

func (s *service) deleteSession(w http.ResponseWriter, r *http.Request) {
	c, _ := middleware.ClaimsFrom(r.Context())
	id := r.PathValue("sessionId")
	sess, ok := s.sessions.use(id, c.ClientID)
	if !ok || sess.DataSource != r.PathValue("datasourceId") {
		problem(w, http.StatusNotFound, "no such session, or it has expired")
		return
	}
	s.sessions.mu.Lock()
	delete(s.sessions.sessions, id)
	s.sessions.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
