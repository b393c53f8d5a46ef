package main

import (
	"net/http"

	"github.com/idsauth/idsauth/accesstoken"
)

// The Connect Session API: a session lives one hour from its last use;
// each call renews it. A session belongs to the client that made it.

func (s *service) createSession(w http.ResponseWriter, r *http.Request) {
	ds := r.PathValue("datasourceId")
	if !s.admin.hasDataSource(ds) {
		problem(w, http.StatusNotFound, "unknown data source")
		return
	}
	c, _ := accesstoken.ClaimsFrom(r.Context())
	sess, err := s.sessions.create(c.ClientID, ds)
	if err != nil {
		// create's one error is errTooManySessions. 429, not 503: the
		// quota is this client's, other clients still get sessions.
		problem(w, http.StatusTooManyRequests, err.Error())
		return
	}
	w.Header().Set("Location", r.URL.Path+"/"+sess.ID)
	writeJSON(w, http.StatusCreated, sess)
}

func (s *service) getSession(w http.ResponseWriter, r *http.Request) {
	c, _ := accesstoken.ClaimsFrom(r.Context())
	sess, ok := s.sessions.use(r.PathValue("sessionId"), c.ClientID)
	if !ok || sess.DataSource != r.PathValue("datasourceId") {
		problem(w, http.StatusNotFound, "no such session, or it has expired")
		return
	}
	writeJSON(w, http.StatusOK, sess)
}

func (s *service) deleteSession(w http.ResponseWriter, r *http.Request) {
	c, _ := accesstoken.ClaimsFrom(r.Context())
	if !s.sessions.end(r.PathValue("sessionId"), c.ClientID, r.PathValue("datasourceId")) {
		problem(w, http.StatusNotFound, "no such session, or it has expired")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
