// One Lua script per operation. Redis runs a script atomically (no other command interleaves), so
// each operation's check and write are one indivisible step: no read-then-write race, one round trip.
//
// Stored per workId, in one hash at `<keyPrefix><workId>`:
//   token     fencing token as an exact decimal string (never a Lua number: those are doubles)
//   holder    holderId
//   expires   expiry in epoch ms on Redis's clock, as an integer string
//   released  '1' once released by its holder, else '0'
//   clean     '1' if the current lease followed a release (or was the first), else '0'
//   state     last checkpointed bytes (absent until the first checkpoint; an empty string is a state)
//
// Every script answers with an array whose first element is a status: 'OK', 'HELD', 'FENCED' or
// 'EXPIRED'. Errors of the store (and a token that cannot grow) are Redis error replies.

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
local function is_holder(f, token, holder)
  return f[1] == token and f[2] == holder and f[4] ~= '1'
end
`

// Adds one to a decimal string digit by digit: tonumber() would round tokens above 2^53.
// nil once the token reached 2^63 - 1, the largest every worklease store can hold.
const INCREMENT = `
local function increment(s)
  if s == '9223372036854775807' then return nil end
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

/** KEYS[1] = lease key; ARGV = holderId, ttlMs. */
export const ACQUIRE = `${PRELUDE}${INCREMENT}
local key = KEYS[1]
local now = now_ms()
local f = redis.call('HMGET', key, 'token', 'expires', 'released')
local token, clean = '1', '1'
if f[1] then
  if f[3] ~= '1' and tonumber(f[2]) > now then return {'HELD'} end
  token = increment(f[1])
  if not token then
    return redis.error_reply('ERR worklease: fencing token of ' .. key .. ' reached 2^63-1 and cannot grow')
  end
  if f[3] == '1' then clean = '1' else clean = '0' end
end
local expires = int(now + tonumber(ARGV[2]))
redis.call('HSET', key, 'token', token, 'holder', ARGV[1], 'expires', expires, 'released', '0', 'clean', clean)
return {'OK', token, expires}
`

/** KEYS[1] = lease key; ARGV = token, holderId, ttlMs, state. */
export const CHECKPOINT = `${PRELUDE}
local key = KEYS[1]
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released')
if not is_holder(f, ARGV[1], ARGV[2]) then return {'FENCED'} end
redis.call('HSET', key, 'state', ARGV[4], 'expires', int(now_ms() + tonumber(ARGV[3])))
return {'OK'}
`

/** KEYS[1] = lease key; ARGV = token, holderId, ttlMs. */
export const RENEW = `${PRELUDE}
local key = KEYS[1]
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released')
if not is_holder(f, ARGV[1], ARGV[2]) then return {'FENCED'} end
local now = now_ms()
if tonumber(f[3]) <= now then return {'EXPIRED'} end
redis.call('HSET', key, 'expires', int(now + tonumber(ARGV[3])))
return {'OK'}
`

// The released mark, not only the timestamp, frees the lease: a successor whose clock is behind
// would otherwise still see it held. (On the server clock that cannot happen, but the mark also
// makes a second release FENCED and tells the successor the handoff was clean.)
/** KEYS[1] = lease key; ARGV = token, holderId. */
export const RELEASE = `${PRELUDE}
local key = KEYS[1]
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released')
if not is_holder(f, ARGV[1], ARGV[2]) then return {'FENCED'} end
local expires = math.min(tonumber(f[3]), now_ms() - 1)
redis.call('HSET', key, 'released', '1', 'expires', int(expires))
return {'OK'}
`

/** KEYS[1] = lease key; ARGV = token, holderId. Returns {'OK', clean, state or nil}. */
export const READ_CHECKPOINT = `${PRELUDE}
local key = KEYS[1]
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released', 'clean', 'state')
if not is_holder(f, ARGV[1], ARGV[2]) then return {'FENCED'} end
return {'OK', f[5], f[6]}
`
