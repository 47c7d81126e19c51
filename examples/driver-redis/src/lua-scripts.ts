// One Lua script per operation. Redis runs a script atomically (no other command interleaves), so
// each operation's check and write are one indivisible step: no read-then-write race, one round trip.
// A lease script makes at most three Redis calls (HMGET, TIME, HSET; acquire adds the index's ZADD,
// the checkpoint's HGET when asked for it, and the eviction check's INFO until that was done once),
// and only those its answer needs.
//
// Stored per workId, in one hash at `<keyPrefix>`, U+0000, `<workId>` (no prefix or workId holds U+0000,
// so two prefixes never name one key):
//   token     fencing token as an exact decimal string (never a Lua number: those are doubles)
//   holder    holderId
//   expires   expiry in epoch ms on Redis's clock, as an integer string
//   released  '1' once released by its holder, else '0'
//   clean     '1' if the current lease followed a release (or was the first), else '0'
//   seq       largest checkpoint sequence stored for the current token; '0' after acquire
//   state     last checkpointed bytes (absent until the first checkpoint; an empty string is a state)
//   indexed   ignored: written by a version that skipped the ZADD once it was set (see ACQUIRE)
//
// With the list index, every workId is also a member (score 0) of the sorted set at `<keyPrefix>`
// itself (no lease key is that: each has U+0000 after the prefix): equal scores order members by their bytes,
// which for UTF-8 is code point order, and ZRANGEBYLEX reads a prefix's range in that order.
//
// Every script answers with an array whose first element is a status: 'OK', 'HELD', 'FENCED',
// 'EXPIRED', 'EXHAUSTED' or 'EVICTS'. Errors of the store are Redis error replies.
//
// An error reply means nothing was written. Redis does not undo a script's writes when it fails
// later, so every script makes all its reads and checks (where WRONGTYPE, a malformed hash or a bad
// argument would fail it) before its first write, and no write after the first can fail: it only
// goes to a hash the script has just read, and Redis refuses a script's writes (out of memory, a
// read-only replica) only until its first one has run. Only ACQUIRE and RENEW_MANY write more than
// once, and each says how it keeps to this.

// `now` is Redis's own clock (TIME: seconds and microseconds), so callers' clocks never matter.
// Epoch milliseconds (about 1.8e12) are exact in a Lua double, and so is now + ttl (ttl < 2^31).
const PRELUDE = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function int(n)
  return string.format('%.0f', n)
end
-- A stored number read strictly: Lua's tonumber() takes 'NaN', '1e3', '0x10' and ' 5', and a NaN
-- expiry compares false both ways (free to acquire, yet renewed for its holder). Anything but an
-- integer of at most 16 digits is an error reply, before the script's first write: a store failure.
local function stored_int(s, field)
  if type(s) ~= 'string' or #s > (string.sub(s, 1, 1) == '-' and 17 or 16) or not string.find(s, '^%-?%d+$') then
    error({err = 'worklease: malformed lease hash: ' .. field .. ' is not an integer'})
  end
  return tonumber(s)
end
local function is_holder(f, token, holder)
  return f[1] == token and f[2] == holder and f[4] ~= '1'
end
`

// Adds one to a decimal string digit by digit: tonumber() would round tokens above 2^53. Up to 15
// digits (below 10^15 < 2^53) a double is exact, so the everyday token takes the arithmetic path.
// nil once the token reached 2^63 - 1, the largest every worklease store can hold, or a token above it
// (written by hand or by another program): never a token no store can keep, and never a write
// before the caller is told. Digit strings of one length compare as their numbers do, so only the
// canonical form is taken: '1e+21', '-5', '0x10' or '007' (which no fence would match as 7) is an
// error reply, written nowhere.
const INCREMENT = `
local function increment(s)
  if not string.find(s, '^[1-9]%d*$') then
    error({err = 'worklease: malformed lease hash: token is not a decimal integer'})
  end
  if #s > 19 or (#s == 19 and s >= '9223372036854775807') then return nil end
  if #s < 16 then return string.format('%.0f', tonumber(s) + 1) end
  local out = {}
  local carry = 1
  for i = #s, 1, -1 do
    local d = string.byte(s, i) - 48 + carry
    if d == 10 then d = 0 else carry = 0 end
    out[i] = string.char(48 + d)
  end
  local r = table.concat(out)
  if carry == 1 then r = '1' .. r end
  return r
end
`

/**
 * KEYS[1] = lease key, KEYS[2] = the list index (absent without one); ARGV = workId, holderId, ttlMs,
 * '1' to read the checkpoint too (acquireWithCheckpoint), and '1' to check first that the server does
 * not evict keys. Returns {'OK', token, expires} (with the read: {'OK', token, expires, clean, state},
 * the state nil when none), or {'HELD', holderId, token, expires, expiresInMs} in the same round trip,
 * {'EXHAUSTED'}, or {'EVICTS', policy}.
 */
export const ACQUIRE = `${PRELUDE}${INCREMENT}
-- A server that evicts any key under memory pressure (maxmemory-policy allkeys-*) would drop a lease
-- hash, and its workId's tokens would start again at 1. The volatile-* policies evict only keys with a
-- TTL, which no lease has. INFO that a server refuses (renamed, a managed service) skips the check.
if ARGV[5] == '1' then
  local ok, info = pcall(redis.call, 'INFO', 'memory')
  local policy = ok and type(info) == 'string' and string.match(info, 'maxmemory_policy:([%w%-]+)')
  if policy and string.sub(policy, 1, 8) == 'allkeys-' then return {'EVICTS', policy} end
end
local key = KEYS[1]
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released')
local now = now_ms()
local token, clean = '1', '1'
if f[1] then
  if f[4] ~= '1' and stored_int(f[3], 'expires') > now then
    return {'HELD', f[2], f[1], f[3], int(tonumber(f[3]) - now)}
  end
  token = increment(f[1])
  if not token then return {'EXHAUSTED'} end
  if f[4] == '1' then clean = '1' else clean = '0' end
end
local expires = int(now + tonumber(ARGV[3]))
-- On every acquire, not only the first: a lease stored before the index existed, or whose index key
-- was deleted, joins it here. A mark in the hash cannot skip this: it outlives the index it marks.
-- (A ZADD of a member already there with score 0 changes nothing: one dict lookup.) Before the HSET:
-- the ZADD is the one write that can fail (WRONGTYPE when the index key holds something else), and
-- as the first write its failure leaves nothing written. The HSET cannot fail after it: HMGET showed
-- the key is a hash or absent, and Redis refuses a script's writes (OOM, read-only replica) only
-- until its first one has run.
if KEYS[2] then redis.call('ZADD', KEYS[2], 0, ARGV[1]) end
redis.call('HSET', key, 'token', token, 'holder', ARGV[2], 'expires', expires, 'released', '0',
  'clean', clean, 'seq', '0')
-- HGET answers false for a missing state, which the reply carries as nil (it does not end the array).
if ARGV[4] == '1' then return {'OK', token, expires, clean, redis.call('HGET', key, 'state')} end
return {'OK', token, expires}
`

// Expiry only moves forward while the lease is held: a late, retried or shorter-ttl call never
// shortens it (only release does). The sequence keeps a checkpoint sent earlier from replacing one
// sent later: not above the stored one, it stores nothing and only extends, like renew.
/** KEYS[1] = lease key; ARGV = token, holderId, ttlMs, state, sequence. */
export const CHECKPOINT = `${PRELUDE}
local key = KEYS[1]
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released', 'seq')
if not is_holder(f, ARGV[1], ARGV[2]) then return {'FENCED'} end
local stored = stored_int(f[3], 'expires')
local expires = math.max(stored, now_ms() + tonumber(ARGV[3]))
-- A hash written before checkpoints had sequences has no seq: 0.
if tonumber(ARGV[5]) > (f[5] and stored_int(f[5], 'seq') or 0) then
  redis.call('HSET', key, 'state', ARGV[4], 'seq', ARGV[5], 'expires', int(expires))
elseif expires > stored then
  redis.call('HSET', key, 'expires', int(expires))
end
return {'OK'}
`

/** KEYS[1] = lease key; ARGV = token, holderId, ttlMs. */
export const RENEW = `${PRELUDE}
local key = KEYS[1]
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released')
if not is_holder(f, ARGV[1], ARGV[2]) then return {'FENCED'} end
local now = now_ms()
local stored = stored_int(f[3], 'expires')
if stored <= now then return {'EXPIRED'} end
local expires = now + tonumber(ARGV[3])
if expires > stored then redis.call('HSET', key, 'expires', int(expires)) end
return {'OK'}
`

/**
 * KEYS = the lease keys; ARGV = holderId, ttlMs, then one token per key. Each lease judged as RENEW
 * judges it, at one "now"; returns {'OK', outcome...} with 'R' (renewed), 'E' (expired) or 'F'
 * (fenced) per key, in KEYS order. Every key is read before any is written: a key of another type
 * (WRONGTYPE) fails the batch before it has renewed a single lease.
 */
export const RENEW_MANY = `${PRELUDE}
local now = now_ms()
local ttl = tonumber(ARGV[2])
local out = {'OK'}
local extend = {}
for i, key in ipairs(KEYS) do
  local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released')
  if not is_holder(f, ARGV[i + 2], ARGV[1]) then
    out[i + 1] = 'F'
  elseif stored_int(f[3], 'expires') <= now then
    out[i + 1] = 'E'
  else
    if now + ttl > tonumber(f[3]) then extend[#extend + 1] = key end
    out[i + 1] = 'R'
  end
end
for _, key in ipairs(extend) do redis.call('HSET', key, 'expires', int(now + ttl)) end
return out
`

// The released mark frees the lease (acquire and every fence check read it before the expiry), makes a
// second release FENCED and tells the successor the handoff was clean. The expiry moves before now
// too, never later than it was, so a listing shows the lease ended rather than running on.
/** KEYS[1] = lease key; ARGV = token, holderId. */
export const RELEASE = `${PRELUDE}
local key = KEYS[1]
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released')
if f[1] ~= ARGV[1] or f[2] ~= ARGV[2] or f[4] == '1' then return {'FENCED'} end
redis.call('HSET', key, 'released', '1', 'expires', int(math.min(stored_int(f[3], 'expires'), now_ms() - 1)))
return {'OK'}
`

/** KEYS[1] = lease key; ARGV = token, holderId. Returns {'OK', clean, state or nil}. */
export const READ_CHECKPOINT = `${PRELUDE}
local key = KEYS[1]
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released', 'clean', 'state')
if not is_holder(f, ARGV[1], ARGV[2]) then return {'FENCED'} end
return {'OK', f[5], f[6]}
`

// Reading only. The lease hashes are read by name from the index's members, not passed as KEYS (they
// are not known before the range is read): fine on a single Redis; on a Cluster every key must share
// the index's slot (a hash-tagged key prefix), which the backend's constructor insists on.
/**
 * KEYS[1] = the list index; ARGV = what lease keys begin with, min, max (ZRANGEBYLEX bounds), limit. Returns
 * {now, next, then per lease: workId, token, holder, expires, released, state size or -1}; `next` is
 * the last workId of the page when more follow, else ''.
 */
export const LIST = `${PRELUDE}
local limit = tonumber(ARGV[4])
local ids = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[2], ARGV[3], 'LIMIT', 0, limit + 1)
local out = {int(now_ms()), ''}
if #ids > limit then out[2] = ids[limit] end
for i = 1, math.min(#ids, limit) do
  local key = ARGV[1] .. ids[i]
  local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released')
  -- A member whose hash is gone (deleted by hand, which the README forbids) is not a lease.
  if f[1] then
    local size = -1
    if redis.call('HEXISTS', key, 'state') == 1 then size = redis.call('HSTRLEN', key, 'state') end
    out[#out + 1] = ids[i]
    out[#out + 1] = f[1]
    out[#out + 1] = f[2]
    out[#out + 1] = f[3]
    out[#out + 1] = f[4]
    out[#out + 1] = size
  end
end
return out
`

// Only a live lease: its holder becomes '' (no valid holderId is empty, so is_holder never holds
// again: FENCED everywhere) and it expires now. A lease revoked before is nobody's, so it is FREE
// even while its expiry is still ahead of TIME (a failover to a replica whose clock is behind, a
// clock stepped back). released stays '0', so the next acquire records an
// unclean handoff; the token and the state are left for it. An expected token is compared as the
// decimal string it is stored as, in the same script: a takeover cannot land between check and write.
/**
 * KEYS[1] = lease key; ARGV[1] = the expected token, or '' for whoever holds the lease. Returns
 * {'OK'} if a live lease was ended, {'FENCED'} if a live lease has another token, else {'FREE'}.
 */
export const REVOKE = `${PRELUDE}
local key = KEYS[1]
local expected = ARGV[1] or ''
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released')
if not f[1] or f[4] == '1' or f[2] == '' then return {'FREE'} end
local now = now_ms()
if stored_int(f[3], 'expires') <= now then return {'FREE'} end
if expected ~= '' and f[1] ~= expected then return {'FENCED'} end
redis.call('HSET', key, 'holder', '', 'expires', int(now - 1))
return {'OK'}
`
