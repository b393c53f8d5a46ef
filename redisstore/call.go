package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// setupTimeout is how long a call to Redis may run on after its caller
// stopped waiting for it (at the store's Timeout): time to finish making a
// connection (dial, TLS, HELLO, AUTH) and to load a script Redis lost
// (NOSCRIPT, after a restart), so that the connection is kept for the
// next call instead of thrown away with the one that timed out. Where
// Redis answers within the Timeout but a new connection takes several
// round trips, every call would otherwise time out making one, and the
// store would never answer again.
const setupTimeout = time.Second

// maxLate bounds the calls of one store that run on after their caller
// gave up: a few connections being made are enough to recover, and a
// Redis that does not answer at all holds no more than these goroutines
// (with their connections) for setupTimeout. A call beyond them ends with
// its caller's wait.
const maxLate = 16

// calls runs a store's calls to Redis.
type calls struct {
	timeout time.Duration
	late    chan struct{} // a slot per call running on after its caller gave up
	// cluster is the store's client when it is a Cluster's, whose map of
	// the slots a failed call has reloaded; nil for any other client.
	cluster *redis.ClusterClient
}

func newCalls(rdb redis.Scripter, timeout time.Duration) calls {
	cluster, _ := rdb.(*redis.ClusterClient)
	return calls{timeout: timeout, late: make(chan struct{}, maxLate), cluster: cluster}
}

// do runs fn, waiting at most the store's timeout or until ctx ends,
// whatever rdb's own timeouts: a hung Redis holds the caller no longer.
// fn's context is not ctx's: it ends setupTimeout after the caller's wait
// would have, and earlier only when no slot is free to run on. The error
// of a caller that stopped waiting is ctx's or context.DeadlineExceeded.
//
// On a Cluster, a call that failed (anything but redis.Nil, the answer
// "no such key") has the client ask the cluster for its slots again, in
// the background: after a failover a replica serves a dead master's
// slots, and go-redis, which reloads its map on a redirection (MOVED) or
// once a minute, would dial the dead address until then, where no
// redirection comes from. The reloads of one client are one at a time,
// at most one per 200 ms however many calls fail (ReloadState).
func (c *calls) do(ctx context.Context, fn func(context.Context) error) error {
	err := c.wait(ctx, fn)
	if err != nil && c.cluster != nil && !errors.Is(err, redis.Nil) {
		c.cluster.ReloadState(context.Background())
	}
	return err
}

// wait is do without the reload.
func (c *calls) wait(ctx context.Context, fn func(context.Context) error) error {
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout+setupTimeout)
	done := make(chan error, 1)
	go func() {
		err := fn(callCtx)
		cancel()
		done <- err
	}()
	wait, stop := context.WithTimeout(ctx, c.timeout)
	defer stop()
	select {
	case err := <-done:
		return err
	case <-wait.Done():
	}
	select {
	case c.late <- struct{}{}:
		// Runs on; its slot is freed when it ends, or at its bound.
		context.AfterFunc(callCtx, func() { <-c.late })
	default:
		cancel()
	}
	return wait.Err()
}
