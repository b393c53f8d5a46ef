package redisstore

import "github.com/redis/go-redis/v9"

// The scripts keep exactly the rules of limit.Memory (see package limit),
// each call in one atomic script, on Redis's clock (TIME, in
// microseconds), so that every replica sees the same budgets at the same
// instant.
//
// A bucket holds a GCRA theoretical arrival time: it is full when that
// time has passed, so it expires then. A pair mark holds the end of a
// failure mark when positive, or minus the end of a trust when negative,
// and expires at that end. Numbers go to Redis through string.format,
// since Lua's own conversion keeps 14 digits.
//
// Every key a script touches is in its KEYS, and all of them are on one
// slot: on one Redis, reserve reads and writes the address's bucket, the
// subject's and their pair mark at once; on a Redis Cluster whose keys the
// store spreads, the address's keys are on the address's slot and the
// subject's on the subject's, so a reservation is reserveAddress, then
// reserveSubject, and giveBack of the address's failure when the subject
// refuses (see Store.reserve for why that keeps the rules).
//
// Every script answers an array of integers.
//
// The shebang makes Redis (7.0 or later) refuse the whole script when it
// is out of memory, before any write, rather than fail half-way.

// lib is what the reserving scripts share: ARGV[1] is the window, in
// microseconds.
const lib = `#!lua
local window = tonumber(ARGV[1])

local function n(v) return string.format('%d', v) end
local function ms(us) return n(math.max(1, math.ceil(us / 1000))) end

-- clock reads the store's clock, a hash without a TTL at key: Redis's
-- TIME plus how far it has been stepped back, so it never goes back.
-- TIME is read in this atomic script, so no reading lags another: one
-- behind the latest time given is a step, and the clock carries on from
-- the latest.
local function clock(key)
  local t = redis.call('TIME')
  local c = redis.call('HMGET', key, 'latest', 'ahead')
  local latest, ahead = tonumber(c[1] or 0), tonumber(c[2] or 0)
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) + ahead
  if latest > now then
    ahead = math.min(ahead + latest - now, 3153600000000000) -- a century, as limit.Memory's bound
    now = latest
  end
  redis.call('HSET', key, 'latest', n(now), 'ahead', n(ahead))
  return now
end

local function wait(tat, step, now) return math.max(0, math.max(tat, now) + step - window - now) end
local function take(key, tat, step, now)
  tat = math.max(tat, now) + step
  redis.call('SET', key, n(tat), 'PX', ms(tat - now))
end

-- address returns how long the address's bucket at key has no room for
-- step (0: it has), and what it holds.
local function address(key, step, now)
  local a = tonumber(redis.call('GET', key) or 0)
  return wait(a, step, now), a
end

-- subject applies the subject's rules to an address with room: it
-- returns {1, trusted, took the subject} or {0, 2, retry after}.
local function subject(skey, pkey, step, now)
  local function mark(untilus, ttl) redis.call('SET', pkey, n(untilus), 'PX', ms(ttl)) end
  local s = tonumber(redis.call('GET', skey) or 0)
  local p = tonumber(redis.call('GET', pkey) or 0)
  local sw = wait(s, step, now)
  if p < 0 and -p > now then return {1, 1, 0} end
  if sw == 0 then
    take(skey, s, step, now)
    local u = math.max(p, now + window)
    mark(u, u - now)
    return {1, 0, 1}
  end
  if p > now then return {0, 2, math.min(sw, p - now)} end
  mark(now + window, window)
  return {1, 0, 0}
end
`

// reserve takes the reservation on one slot. KEYS: the address's bucket,
// the subject's bucket, the pair mark, the store's clock. ARGV: the
// window, the subject's step and the address's step, in microseconds. It
// returns {1, trusted, took the subject, now} or {0, which limit (1
// address, 2 subject+address), retry after in microseconds, now}, now on
// the store's clock.
var reserve = redis.NewScript(lib + `
local now = clock(KEYS[4])
local astep = tonumber(ARGV[3])
local aw, a = address(KEYS[1], astep, now)
if aw > 0 then return {0, 1, aw, now} end
local r = subject(KEYS[2], KEYS[3], tonumber(ARGV[2]), now)
if r[1] == 0 then return {0, 2, r[3], now} end
take(KEYS[1], a, astep, now)
return {1, r[2], r[3], now}
`)

// reserveAddress takes one failure from the address's budget, on its
// slot. KEYS: the address's bucket, its tag's clock. ARGV: the window,
// the address's step. It returns {1, 0, 0, now} or {0, 1, retry after,
// now}.
var reserveAddress = redis.NewScript(lib + `
local now = clock(KEYS[2])
local step = tonumber(ARGV[2])
local aw, a = address(KEYS[1], step, now)
if aw > 0 then return {0, 1, aw, now} end
take(KEYS[1], a, step, now)
return {1, 0, 0, now}
`)

// reserveSubject applies the subject's rules, on its slot, to an
// address reserveAddress charged. KEYS: the subject's bucket, the pair
// mark, the subject's tag's clock. ARGV: the window, the subject's step.
// It answers as reserve.
var reserveSubject = redis.NewScript(lib + `
local now = clock(KEYS[3])
local r = subject(KEYS[1], KEYS[2], tonumber(ARGV[2]), now)
if r[1] == 0 then return {0, 2, r[3], now} end
return {1, r[2], r[3], now}
`)

// giveback is what giveBack and succeeded share: a bucket that has
// expired is full already, and is not made again.
const giveback = `#!lua
local function giveback(key, step)
  if tonumber(step) > 0 and redis.call('EXISTS', key) == 1 then redis.call('DECRBY', key, step) end
end
`

// giveBack gives each bucket in KEYS back its step in ARGV, in
// microseconds (0: none).
var giveBack = redis.NewScript(giveback + `
for i, key in ipairs(KEYS) do giveback(key, ARGV[i]) end
return {1}
`)

// succeeded gives a reservation back and trusts the address for the
// subject. KEYS: the buckets to give back, then the pair mark. ARGV: the
// reservation's now, the budget's Trust, then each bucket's step (0 when it was not
// taken); in microseconds.
var succeeded = redis.NewScript(giveback + `
local now, good = tonumber(ARGV[1]), tonumber(ARGV[2])
for i = 1, #KEYS - 1 do giveback(KEYS[i], ARGV[i + 2]) end
redis.call('SET', KEYS[#KEYS], string.format('%d', -(now + good)), 'PX', string.format('%d', math.ceil(good / 1000)))
return {1}
`)

// failed ends the trust of an address that failed: its pair mark, KEYS[1],
// becomes a failure mark for the window. ARGV: the reservation's now, the
// window; in microseconds.
var failed = redis.NewScript(`#!lua
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('SET', KEYS[1], string.format('%d', now + window), 'PX', string.format('%d', math.ceil(window / 1000)))
return {1}
`)

// remember sets a jti's key unless it exists. ARGV: its time to live, in
// milliseconds. It returns {1} when the key was set (the jti is fresh),
// {0} when it existed (a replay).
var remember = redis.NewScript(`#!lua
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return {1} end
return {0}
`)
