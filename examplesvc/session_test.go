package main

import (
	"testing"
	"time"
)

func TestSessionLifetimeAndOwner(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	s := newSessionStore()
	s.now = func() time.Time { return now }
	s.sessions["id"] = &session{ID: "id", DataSource: "demo", Created: now, ExpiresAt: now.Add(sessionLifetime), owner: "connect"}

	if _, ok := s.use("id", "someone-else"); ok {
		t.Fatal("another client used the session")
	}
	now = now.Add(59 * time.Minute)
	got, ok := s.use("id", "connect")
	if !ok || !got.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("use after 59 minutes: %v %v; each use renews for an hour", ok, got.ExpiresAt)
	}
	now = now.Add(59 * time.Minute) // 118 minutes after creation, 59 after the last use
	if _, ok := s.use("id", "connect"); !ok {
		t.Fatal("the renewal did not hold")
	}
	now = now.Add(time.Hour + time.Second)
	if _, ok := s.use("id", "connect"); ok {
		t.Fatal("a session an hour past its last use is still alive")
	}
	if len(s.sessions) != 0 {
		t.Fatal("the expired session was not dropped")
	}
}
