package redisstore

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// circuit is whether to ask one Redis: the store's, or one master of a
// Cluster whose keys the store spreads, so that a master that fails costs
// only the clients whose slots it serves.
type circuit struct {
	node string // the master's address; "" for the store's Redis as a whole
	// retryAt is 0 while the Redis answers; once it failed, the Unix
	// nanosecond before which it is skipped.
	retryAt atomic.Int64
}

// circuits are a store's: one, or one per master of a Cluster.
type circuits struct {
	whole   circuit
	cluster *redis.ClusterClient // nil unless the store spreads its keys
	// slotsKnown is set once a call answered: the client has the
	// cluster's slots, and finds a key's master without a round trip.
	slotsKnown atomic.Bool
	nodes      sync.Map // master's address → *circuit
}

// of returns the circuit of the Redis that holds key. Until the client
// knows the cluster's slots, that is the whole cluster's.
func (cs *circuits) of(key string) *circuit {
	if cs.cluster == nil || !cs.slotsKnown.Load() {
		return &cs.whole
	}
	// The slots are known: MasterForKey reads them, with no round trip.
	node, err := cs.cluster.MasterForKey(context.Background(), key)
	if err != nil {
		return &cs.whole
	}
	addr := node.Options().Addr
	if c, ok := cs.nodes.Load(addr); ok {
		return c.(*circuit)
	}
	c, _ := cs.nodes.LoadOrStore(addr, &circuit{node: addr})
	return c.(*circuit)
}

// use reports whether to ask c's Redis: while it answers, always; once
// it failed, one request per RetryInterval.
func (s *Store) use(c *circuit) bool {
	at := c.retryAt.Load()
	if at == 0 {
		return true
	}
	now := time.Now().UnixNano()
	return now >= at && c.retryAt.CompareAndSwap(at, now+int64(s.interval))
}

func (s *Store) failed(c *circuit, err error) {
	s.errs.Add(1) // calls.do has had a cluster's slots reloaded
	if c.retryAt.Swap(time.Now().Add(s.interval).UnixNano()) == 0 {
		mode := "falling back to per-process limits"
		if s.mode == FailClosed {
			mode = "refusing every attempt"
		}
		attrs := []any{slog.String("error", err.Error())}
		what := "Redis does not answer"
		if c.node != "" {
			attrs = append(attrs, slog.String("node", c.node))
			what = "a master of the Redis Cluster does not answer"
			mode += " for the clients and addresses whose slots it serves"
		}
		s.logger.Warn("idsauth redisstore: "+what+"; "+mode+" until it does", attrs...)
	}
}

func (s *Store) answered(c *circuit) {
	if s.circuits.cluster != nil && !s.circuits.slotsKnown.Load() {
		s.circuits.slotsKnown.Store(true)
	}
	if c.retryAt.Load() != 0 && c.retryAt.Swap(0) != 0 {
		if c.node != "" {
			s.logger.Info("idsauth redisstore: the master answers again", slog.String("node", c.node))
			return
		}
		s.logger.Info("idsauth redisstore: Redis answers again")
	}
}
