package main

import (
	"errors"
	"testing"
	"time"
)

func TestSessionLifetimeAndOwner(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	s := newSessionStore(maxSessionsPerClient)
	s.now = func() time.Time { return now }
	created, err := s.create("connect", "demo")
	if err != nil {
		t.Fatal(err)
	}
	id := created.ID

	if _, ok := s.use(id, "someone-else"); ok {
		t.Fatal("another client used the session")
	}
	now = now.Add(59 * time.Minute)
	got, ok := s.use(id, "connect")
	if !ok || !got.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("use after 59 minutes: %v %v; each use renews for an hour", ok, got.ExpiresAt)
	}
	now = now.Add(59 * time.Minute) // 118 minutes after creation, 59 after the last use
	if _, ok := s.use(id, "connect"); !ok {
		t.Fatal("the renewal did not hold")
	}
	now = now.Add(time.Hour + time.Second)
	if _, ok := s.use(id, "connect"); ok {
		t.Fatal("a session an hour past its last use is still alive")
	}
	if s.len() != 0 {
		t.Fatal("the expired session was not dropped")
	}
}

func TestSessionStoreBound(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	s := newSessionStore(3)
	s.now = func() time.Time { return now }
	var ids []string
	for range 3 {
		sess, err := s.create("a", "demo")
		if err != nil {
			t.Fatalf("create below the bound: %v", err)
		}
		ids = append(ids, sess.ID)
	}
	if _, err := s.create("a", "demo"); !errors.Is(err, errTooManySessions) {
		t.Fatalf("create past the bound: %v, want errTooManySessions", err)
	}
	if _, err := s.create("b", "demo"); err != nil {
		t.Fatalf("a full client took another client's slot: %v", err)
	}
	if s.end(ids[0], "b", "demo") || s.end(ids[0], "a", "elsewhere") {
		t.Fatal("a session was ended by another client or on another data source")
	}
	if !s.end(ids[0], "a", "demo") {
		t.Fatal("end of a live session failed")
	}
	if _, err := s.create("a", "demo"); err != nil {
		t.Fatalf("a deleted session did not free its slot: %v", err)
	}
	if _, err := s.create("a", "demo"); !errors.Is(err, errTooManySessions) {
		t.Fatalf("create past the bound again: %v", err)
	}

	// Using a session moves it to the back of the expiry order: after an
	// hour only it is left of a's sessions.
	now = now.Add(30 * time.Minute)
	if _, ok := s.use(ids[1], "a"); !ok {
		t.Fatal("use failed")
	}
	now = now.Add(31 * time.Minute)
	if _, err := s.create("a", "demo"); err != nil {
		t.Fatalf("expired sessions did not free their slots: %v", err)
	}
	if got := s.len(); got != 2 {
		t.Fatalf("store holds %d sessions, want 2 (the renewed one and the new one)", got)
	}
	if _, ok := s.use(ids[1], "a"); !ok {
		t.Fatal("the renewed session was dropped")
	}
}
