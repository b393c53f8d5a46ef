package main

import (
	"context"
	"expvar"
	"fmt"
	"net/http"

	"github.com/idsauth/idsauth/observe"
)

// metrics counts the library's events for /debug/vars: one expvar.Map
// per kind of event, keyed by what tells its events apart (a reason, a
// client ID, a tenant, whether the cache answered). Every key comes from
// an observe.Event, so none is a token, a secret or attacker's text.
type metrics struct {
	kinds expvar.Map
}

func newMetrics() *metrics {
	m := &metrics{}
	for k := observe.ValidationSucceeded; k <= observe.SCIMRefused; k++ {
		m.kinds.Set(k.String(), new(expvar.Map))
	}
	return m
}

// Observe counts e.
func (m *metrics) Observe(_ context.Context, e observe.Event) {
	var key string
	switch e.Kind {
	case observe.ValidationSucceeded:
		key = "verified"
		if e.Cached {
			key = "cached"
		}
	case observe.ValidationFailed, observe.Rejected, observe.KeysFetchFailed, observe.TokenRefused, observe.SCIMRefused:
		key = e.Reason
	case observe.TokenIssued:
		key = e.ClientID
	case observe.SCIMAuthenticated:
		key = e.Tenant
	case observe.KeysFetched:
		key = "fetches"
	}
	if key == "" {
		key = "(none)"
	}
	if per, ok := m.kinds.Get(e.Kind.String()).(*expvar.Map); ok {
		per.Add(key, 1)
	}
}

// debugVars serves the process's expvar variables, as expvar.Handler
// does, and these metrics as "idsauth": without publishing them in the
// process-wide registry, so that several services (tests) can coexist.
func (m *metrics) debugVars(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fmt.Fprintf(w, "{\n%q: %s", "idsauth", m.kinds.String())
	expvar.Do(func(kv expvar.KeyValue) {
		fmt.Fprintf(w, ",\n%q: %s", kv.Key, kv.Value)
	})
	fmt.Fprintf(w, "\n}\n")
}
