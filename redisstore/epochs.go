package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The issuer's record of client epochs (tokenstore.Epochs): one string
// key per client, under Prefix, "epoch:" and the client ID, holding the
// epoch in decimal, without expiry. A client ended once is a few dozen
// bytes for good: the IDs are the issuer's configuration's, not a
// caller's.

// advanceEpoch sets KEYS[1] to ARGV[2] if it holds ARGV[1] (or is
// missing and ARGV[1] is "0").
var advanceEpoch = redis.NewScript(`
local cur = redis.call('GET', KEYS[1]) or '0'
if cur == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1`)

func (s *TokenStore) epochKey(id string) string { return s.prefix + "epoch:" + id }

// Epochs implements tokenstore.Epochs: one GET per client, each on its
// own key (on a Cluster, its own slot), in one pipeline when the client
// makes pipelines (a *redis.Client, *redis.ClusterClient or *redis.Ring
// does), else one after the other.
func (s *TokenStore) Epochs(ctx context.Context, ids []string) ([]uint64, error) {
	out := make([]uint64, len(ids))
	err := s.calls.do(ctx, func(ctx context.Context) error {
		cmds := make([]*redis.Cmd, len(ids))
		if p, ok := s.rdb.(interface {
			Pipelined(context.Context, func(redis.Pipeliner) error) ([]redis.Cmder, error)
		}); ok {
			// EVAL, not EVALSHA: a pipeline cannot load a script it lacks.
			_, _ = p.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for i, id := range ids {
					cmds[i] = getEpoch.Eval(ctx, pipe, []string{s.epochKey(id)})
				}
				return nil
			})
		} else {
			for i, id := range ids {
				cmds[i] = getEpoch.Run(ctx, s.rdb, []string{s.epochKey(id)})
			}
		}
		for i, c := range cmds {
			v, err := c.Text()
			switch {
			case errors.Is(err, redis.Nil):
				continue
			case err != nil:
				return err
			}
			if out[i], err = strconv.ParseUint(v, 10, 64); err != nil {
				return fmt.Errorf("an epoch that is not ours under %s", s.epochKey(ids[i]))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	return out, nil
}

// getEpoch reads one epoch: a script, as every call of a TokenStore is
// (redis.Scripter is what it is given).
var getEpoch = redis.NewScript(`return redis.call('GET', KEYS[1])`)

// AdvanceEpoch implements tokenstore.Epochs.
func (s *TokenStore) AdvanceEpoch(ctx context.Context, id string, from, to uint64) error {
	err := s.calls.do(ctx, func(ctx context.Context) error {
		return advanceEpoch.Run(ctx, s.rdb, []string{s.epochKey(id)}, strconv.FormatUint(from, 10), strconv.FormatUint(to, 10)).Err()
	})
	if err != nil {
		return fmt.Errorf("redisstore: %w", err)
	}
	return nil
}
