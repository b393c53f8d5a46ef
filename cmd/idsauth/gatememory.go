package main

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// The gate's two memories are bounded in bytes, each entry charged for
// its strings and a fixed overhead, and forget everything when full
// (then fill again): whoever fills one costs the others a recomputation,
// never a wrong answer.

// decisionKey is a decision's: a route and a token.
type decisionKey struct{ route, token string }

// decisionCache keeps, per token and route, the upstream headers of a
// decision to admit: the claims' headers and the assertion, computed
// once. Only a token the route admitted enters it, so only holders of
// good tokens fill it. A proof of possession is checked on every request
// before it is asked (the route's chain), whatever it holds.
type decisionCache struct {
	mu    sync.RWMutex
	m     map[decisionKey]decision
	bytes int
	max   int
}

type decision struct {
	values  []string
	expires time.Time
}

const (
	decisionBytes = 8 << 20
	// maxDecisionToken is the longest token kept: longer ones are
	// decided afresh each time.
	maxDecisionToken = 4 << 10
	entryOverhead    = 160
)

func newDecisionCache() *decisionCache {
	return &decisionCache{m: map[decisionKey]decision{}, max: decisionBytes}
}

func (c *decisionCache) get(route, token string, now time.Time) ([]string, bool) {
	c.mu.RLock()
	d, ok := c.m[decisionKey{route, token}]
	c.mu.RUnlock()
	if !ok || !now.Before(d.expires) {
		return nil, false
	}
	return d.values, true
}

func (c *decisionCache) put(route, token string, values []string, expires, now time.Time) {
	if len(token) > maxDecisionToken || !now.Before(expires) {
		return
	}
	cost := entryOverhead + len(route) + len(token)
	for _, v := range values {
		cost += len(v) + 16
	}
	k := decisionKey{route, strings.Clone(token)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+cost > c.max {
		clear(c.m)
		c.bytes = 0
	}
	if _, ok := c.m[k]; !ok {
		c.bytes += cost
	}
	c.m[k] = decision{values: values, expires: expires}
}

// answerMemory keeps, for a few seconds, the refusals the gate gave
// nginx's auth_request, by nginx's $request_id: nginx turns a refusal
// into an internal redirect that asks the gate again for the answer to
// send (auth_request itself passes no body), and that second call gets
// the very answer of the first, not a new decision (which, after a DPoP
// proof was taken, would find its jti used).
type answerMemory struct {
	mu    sync.Mutex
	m     map[string]storedAnswer
	bytes int
	max   int
	ttl   time.Duration
}

type storedAnswer struct {
	status  int
	header  http.Header
	body    []byte
	expires time.Time
}

func newAnswerMemory() *answerMemory {
	return &answerMemory{m: map[string]storedAnswer{}, max: 4 << 20, ttl: 10 * time.Second}
}

// put keeps the answer of request id; an id over 128 bytes is not kept.
func (m *answerMemory) put(id string, a storedAnswer, now time.Time) {
	if id == "" || len(id) > 128 {
		return
	}
	cost := entryOverhead + len(id) + len(a.body)
	for k, vs := range a.header {
		cost += len(k)
		for _, v := range vs {
			cost += len(v) + 16
		}
	}
	a.expires = now.Add(m.ttl)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bytes+cost > m.max {
		clear(m.m)
		m.bytes = 0
	}
	if _, ok := m.m[id]; !ok {
		m.bytes += cost
	}
	m.m[strings.Clone(id)] = a
}

// take returns and forgets the answer of request id.
func (m *answerMemory) take(id string, now time.Time) (storedAnswer, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.m[id]
	if ok {
		delete(m.m, id)
	}
	if !ok || !now.Before(a.expires) {
		return storedAnswer{}, false
	}
	return a, true
}
