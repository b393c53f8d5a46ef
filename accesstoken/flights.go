package accesstoken

import "sync"

// waiting reports how many callers wait for the call about token, for
// tests: a count, so that they need not guess at timing.
func (f *flights) waiting(token string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[token]; ok {
		return fl.waiters
	}
	return 0
}

// flights collapses concurrent calls about one token into one.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

type flight struct {
	done    chan struct{}
	claims  *Claims
	err     error
	waiters int // callers who joined it; under flights.mu
}

// do calls fn once for every caller about token that arrives while a
// call is under way; they all get its result.
func (f *flights) do(token string, fn func() (*Claims, error)) (*Claims, error) {
	f.mu.Lock()
	if f.m == nil {
		f.m = make(map[string]*flight)
	}
	if fl, ok := f.m[token]; ok {
		fl.waiters++
		f.mu.Unlock()
		<-fl.done
		return fl.claims, fl.err
	}
	fl := &flight{done: make(chan struct{})}
	f.m[token] = fl
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.m, token)
		f.mu.Unlock()
		close(fl.done)
	}()
	fl.claims, fl.err = fn()
	return fl.claims, fl.err
}
