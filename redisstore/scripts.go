package redisstore

import "github.com/redis/go-redis/v9"

// The scripts keep exactly the rules of limit.Memory (see package limit),
// each call in one atomic script, on Redis's clock (TIME, in
// microseconds), so that every replica sees the same budgets at the same
// instant.
//
// KEYS of the limiter's scripts: the address's bucket, the subject's
// bucket, the pair mark, and (reserve) the store's clock.
// A bucket holds a GCRA theoretical arrival time: it is full when that
// time has passed, so it expires then. A pair mark holds the end of a
// failure mark when positive, or minus the end of a trust when negative,
// and expires at that end. Numbers go to Redis through string.format,
// since Lua's own conversion keeps 14 digits.
//
// Every script answers an array of integers.
//
// The shebang makes Redis (7.0 or later) refuse the whole script when it
// is out of memory, before any write, rather than fail half-way.

// reserve takes the reservation. KEYS[4] is the store's clock, a hash
// without a TTL. ARGV: the window, the subject's step and the address's
// step, in microseconds. It returns {1, trusted, took the
// subject, now} or {0, which limit (1 address, 2 subject+address), retry
// after in microseconds, now}, now on the store's clock.
var reserve = redis.NewScript(`#!lua
local window, sstep, astep = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

local function n(v) return string.format('%d', v) end
local function ms(us) return n(math.max(1, math.ceil(us / 1000))) end

-- The store's clock never goes back: Redis's TIME plus how far it has
-- been stepped back. TIME is read in this atomic script, so no reading
-- lags another: one behind the latest time given is a step, and the
-- clock carries on from the latest.
local t = redis.call('TIME')
local c = redis.call('HMGET', KEYS[4], 'latest', 'ahead')
local latest, ahead = tonumber(c[1] or 0), tonumber(c[2] or 0)
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) + ahead
if latest > now then
  ahead = math.min(ahead + latest - now, 3153600000000000) -- a century, as limit.Memory's bound
  now = latest
end
redis.call('HSET', KEYS[4], 'latest', n(now), 'ahead', n(ahead))

local function wait(tat, step) return math.max(0, math.max(tat, now) + step - window - now) end
local function take(key, tat, step)
  tat = math.max(tat, now) + step
  redis.call('SET', key, n(tat), 'PX', ms(tat - now))
end
local function mark(untilus, ttl) redis.call('SET', KEYS[3], n(untilus), 'PX', ms(ttl)) end

local a = tonumber(redis.call('GET', KEYS[1]) or 0)
local aw = wait(a, astep)
if aw > 0 then return {0, 1, aw, now} end
local s = tonumber(redis.call('GET', KEYS[2]) or 0)
local p = tonumber(redis.call('GET', KEYS[3]) or 0)
local sw = wait(s, sstep)
local good, took = 0, 0
if p < 0 and -p > now then
  good = 1
elseif sw == 0 then
  take(KEYS[2], s, sstep)
  took = 1
  local u = math.max(p, now + window)
  mark(u, u - now)
elseif p > now then
  return {0, 2, math.min(sw, p - now), now}
else
  mark(now + window, window)
end
take(KEYS[1], a, astep)
return {1, good, took, now}
`)

// succeeded gives a reservation back and trusts the address for the
// subject. ARGV: the reservation's now, the address's step, the
// subject's step (0 when it was not taken), the budget's Trust; in
// microseconds. A bucket that has expired is full already: it is not
// made again.
var succeeded = redis.NewScript(`#!lua
local now = tonumber(ARGV[1])
local function giveback(key, step)
  if tonumber(step) > 0 and redis.call('EXISTS', key) == 1 then redis.call('DECRBY', key, step) end
end
giveback(KEYS[1], ARGV[2])
giveback(KEYS[2], ARGV[3])
local good = tonumber(ARGV[4])
redis.call('SET', KEYS[3], string.format('%d', -(now + good)), 'PX', string.format('%d', math.ceil(good / 1000)))
return {1}
`)

// failed ends the trust of an address that failed: its pair mark becomes
// a failure mark for the window. ARGV: the reservation's now, the window;
// in microseconds.
var failed = redis.NewScript(`#!lua
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('SET', KEYS[3], string.format('%d', now + window), 'PX', string.format('%d', math.ceil(window / 1000)))
return {1}
`)

// remember sets a jti's key unless it exists. ARGV: its time to live, in
// milliseconds. It returns {1} when the key was set (the jti is fresh),
// {0} when it existed (a replay).
var remember = redis.NewScript(`#!lua
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return {1} end
return {0}
`)
