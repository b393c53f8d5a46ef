package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/internal/redistest"
)

// redisServer is a redis-server the test started (internal/redistest),
// on a free loopback port, with a temporary directory and no persistence.
type redisServer struct {
	*redistest.Server
	addr string
}

// startRedis starts a redis-server for t and stops it, by its PID, when t
// ends. Without redis-server on PATH the test is skipped, unless CI is
// set: there it must run.
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	s := redistest.Start(t)
	return &redisServer{Server: s, addr: s.Addr}
}

// client returns a client of s that t closes.
func (s *redisServer) client(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// kill stops the server by its PID, at once.
func (s *redisServer) kill() { s.Kill() }

// pause stops the server's process (SIGSTOP): its port still accepts
// connections, and nothing answers, as a hung Redis.
func (s *redisServer) pause(t *testing.T) { s.Pause(t) }

// resume undoes pause.
func (s *redisServer) resume(t *testing.T) { s.Resume(t) }
