// Package eventtest records observe events in tests, and checks that none
// of them carries what an event must never carry.
package eventtest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idsauth/idsauth/observe"
)

// Recorder is an observe.Observer that keeps every event, safe for
// concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []observe.Event
	all    []observe.Event
}

// Observe keeps e, with a copy of its Scopes.
func (r *Recorder) Observe(_ context.Context, e observe.Event) {
	e.Scopes = slices.Clone(e.Scopes)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	r.all = append(r.all, e)
}

// Take returns the events since the last Take, and forgets them; All
// still has them.
func (r *Recorder) Take() []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	return e
}

// All returns every event recorded.
func (r *Recorder) All() []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

// Want fails t unless got is want, event by event, ignoring Duration
// (which must be set, and only set, for the kinds that time their work).
func Want(t testing.TB, what string, got []observe.Event, want ...observe.Event) {
	t.Helper()
	norm := func(es []observe.Event, check bool) []string {
		out := make([]string, len(es))
		for i, e := range es {
			timed := e.Kind == observe.ValidationSucceeded || e.Kind == observe.ValidationFailed ||
				e.Kind == observe.TokenIssued || e.Kind == observe.TokenRefused
			if check && timed != (e.Duration > 0) {
				t.Errorf("%s: %v has Duration %v", what, e.Kind, e.Duration)
			}
			e.Duration = 0
			out[i] = fmt.Sprintf("%v%+v", e.Kind, e)
		}
		return out
	}
	if g, w := norm(got, true), norm(want, false); !slices.Equal(g, w) {
		t.Errorf("%s: events\n got %q\nwant %q", what, g, w)
	}
}

var code = regexp.MustCompile(`^([a-z]+(_[a-z]+)*)?$`)

// Scan fails t if an event holds any of secrets (tokens, secrets,
// error_description texts, unregistered names), in whole or, for a token,
// any of its dot-separated parts; or a client ID or tenant not in
// registered; or a Reason that is not a snake-case code.
func Scan(t testing.TB, events []observe.Event, registered []string, secrets ...string) {
	t.Helper()
	var needles []string
	for _, s := range secrets {
		needles = append(needles, s)
		for part := range strings.SplitSeq(s, ".") {
			if len(part) >= 8 {
				needles = append(needles, part)
			}
		}
	}
	for _, e := range events {
		text := fmt.Sprintf("%#v", e)
		for _, n := range needles {
			if n != "" && strings.Contains(text, n) {
				t.Errorf("event %v holds %.40q", text, n)
			}
		}
		for _, name := range []string{e.ClientID, e.Tenant} {
			if name != "" && !slices.Contains(registered, name) {
				t.Errorf("event %v names %q, which is not registered", text, name)
			}
		}
		if !code.MatchString(e.Reason) {
			t.Errorf("event %v: reason %q is not a code", text, e.Reason)
		}
		if e.Kind.String() == "unknown" {
			t.Errorf("event %v: unknown kind", text)
		}
	}
}
