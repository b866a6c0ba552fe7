-- ratelab reservoir (token bucket): one HASH per key with the level and the
-- time it was last refilled. Capacity `limit` units; refill `limit` units per
-- window, continuously. The level is kept in micro-units (units * 1e6) so the
-- arithmetic stays in exact integers.
-- Fields: "l" level in micro-units, "t" last refill, µs.
-- KEYS[1]  the key
-- ARGV[1]  capacity (limit), units
-- ARGV[2]  window, microseconds: the time to refill from empty to full
-- ARGV[3]  cost
-- ARGV[4]  now, integer microseconds; "" reads Redis TIME
-- Reply: {allowed 0|1, remaining, retry_after_us, now_us}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now
if ARGV[4] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[4])
end

local full = limit * 1000000
local st = redis.call('HMGET', key, 'l', 't')
local level0 = full
local last = now
if st[1] then
  level0 = tonumber(st[1])
  last = tonumber(st[2])
end
local level = level0
if now > last then
  level = math.min(full, level0 + math.floor((now - last) * limit * 1000000 / window))
end

local need = cost * 1000000
if level < need then
  -- refilling (need - level0) micro-units from `last` takes (need - level0) * window / full µs
  local retry = last + math.ceil((need - level0) * window / full) - now
  return {0, math.floor(level / 1000000), math.max(retry, 1), now}
end
last = math.max(last, now)
level = level - need
redis.call('HSET', key, 'l', string.format('%d', level), 't', string.format('%d', last))
-- once full again, the key holds nothing a missing key would not say
local ttl_ms = math.ceil((full - level) * window / full / 1000)
redis.call('PEXPIRE', key, math.max(ttl_ms, 1))
return {1, math.floor(level / 1000000), 0, now}
