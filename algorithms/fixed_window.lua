-- ratelab fixed window: one integer counter per key and window number
-- floor(now / window); the window number is part of the key name.
-- KEYS[1]  the key's base name; the counter is "<base>:<window number>", which
--          shares the base's hash tag, so it lives in the same Cluster slot
-- ARGV[1]  limit (cost units per window)
-- ARGV[2]  window, microseconds
-- ARGV[3]  cost
-- ARGV[4]  now, integer microseconds; "" reads Redis TIME
-- Reply: {allowed 0|1, remaining, retry_after_us, now_us}
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

local n = math.floor(now / window)
local key = KEYS[1] .. ':' .. string.format('%d', n)
local used = tonumber(redis.call('GET', key) or '0')
local reset = (n + 1) * window - now

if used + cost > limit then
  return {0, limit - used, reset, now}
end
redis.call('INCRBY', key, cost)
-- a whole window: the counter outlives its window by at most that much
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return {1, limit - used - cost, 0, now}
