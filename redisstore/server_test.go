package redisstore_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/internal/redistest"
)

// redisServer is where a test's stores keep their data: one redis-server
// (internal/redistest), or a Redis Cluster of three masters, each on a
// free loopback port, with a temporary directory and no persistence,
// stopped by its PID when the test ends.
type redisServer struct {
	nodes   []*redistest.Server // the one server, or the cluster's masters
	cluster *redistest.Cluster  // nil for one server
	addr    string              // the one server's, or the first master's
}

// kind is one of the two ways a test starts a redisServer.
type kind struct {
	name    string
	cluster bool
}

// kinds are what every store test runs on: one redis-server, and a
// cluster of three masters whose client knows only the first.
var kinds = []kind{{"one redis-server", false}, {"a cluster of three masters", true}}

// start starts a redisServer of kind k for t; args go to every
// redis-server. Without redis-server on PATH the test is skipped, unless
// CI is set: there it must run.
func (k kind) start(t *testing.T, args ...string) *redisServer {
	t.Helper()
	if !k.cluster {
		s := redistest.Start(t, args...)
		return &redisServer{nodes: []*redistest.Server{s}, addr: s.Addr}
	}
	c := redistest.StartCluster(t, 3, args...)
	return &redisServer{nodes: c.Nodes, cluster: c, addr: c.Nodes[0].Addr}
}

// startRedis starts one redis-server for t.
func startRedis(t *testing.T) *redisServer { return kinds[0].start(t) }

// client returns a client of s that t closes: a *redis.Client, or a
// *redis.ClusterClient that is told the first master only and finds the
// others from it.
func (s *redisServer) client(t *testing.T) redis.UniversalClient {
	return s.clientWith(t, redis.UniversalOptions{})
}

// clientWith is client with options o (Addrs set by s).
func (s *redisServer) clientWith(t *testing.T, o redis.UniversalOptions) redis.UniversalClient {
	o.ContextTimeoutEnabled = true
	o.Addrs = []string{s.addr}
	var c redis.UniversalClient
	if s.cluster != nil {
		c = redis.NewClusterClient(o.Cluster())
	} else {
		c = redis.NewClient(o.Simple())
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// eachNode runs fn on a client of each node (the cluster's masters).
func (s *redisServer) eachNode(t *testing.T, fn func(node *redis.Client)) {
	t.Helper()
	for _, n := range s.nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr})
		fn(c)
		c.Close()
	}
}

// keys returns every key of every node that matches pattern.
func (s *redisServer) keys(t *testing.T, pattern string) []string {
	t.Helper()
	var keys []string
	s.eachNode(t, func(c *redis.Client) {
		ks, err := c.Keys(context.Background(), pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, ks...)
	})
	slices.Sort(keys)
	return keys
}

// slot returns the cluster's slot of key (CLUSTER KEYSLOT), as the first
// master says.
func (s *redisServer) slot(t *testing.T, key string) int {
	t.Helper()
	v, err := s.nodes[0].Do("CLUSTER", "KEYSLOT", key)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// nodeOf returns the index of the master that serves key.
func (s *redisServer) nodeOf(t *testing.T, key string) int {
	return s.cluster.NodeOf(s.slot(t, key))
}

// tag is the hash tag in a key, "{...}", or "".
func tag(key string) string {
	_, rest, ok := strings.Cut(key, "{")
	end := strings.IndexByte(rest, '}')
	if !ok || end <= 0 {
		return ""
	}
	return "{" + rest[:end+1]
}

// kill stops every node by its PID, at once.
func (s *redisServer) kill() {
	var wg sync.WaitGroup
	for _, n := range s.nodes {
		wg.Go(n.Kill)
	}
	wg.Wait()
}

// pause stops every node's process (SIGSTOP): their ports still accept
// connections, and nothing answers, as a hung Redis.
func (s *redisServer) pause(t *testing.T) {
	for _, n := range s.nodes {
		n.Pause(t)
	}
}

// resume undoes pause.
func (s *redisServer) resume(t *testing.T) {
	for _, n := range s.nodes {
		n.Resume(t)
	}
}
