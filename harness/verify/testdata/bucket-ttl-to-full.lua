-- A token bucket of `capacity` tokens refilled at `rate` tokens per second
-- (twin of expiring-bucket.lua): an idle key expires once it would be full
-- anyway, so coming back full is what the bucket would have said.
-- Verified with capacity L/2 and rate L/2 per window: at most L in any
-- window.
-- ARGV: now_us, capacity, rate (tokens per second), requested
local now = tonumber(ARGV[1])
local capacity, rate, requested = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local fill_time = capacity / rate
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(b[1]), tonumber(b[2])
if not tokens then tokens, ts = capacity, now end
tokens = math.min(capacity, tokens + (now - ts) / 1e6 * rate)
local allowed = tokens >= requested
if allowed then tokens = tokens - requested end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', string.format('%d', now))
redis.call('EXPIRE', KEYS[1], math.ceil(fill_time))
if allowed then return 1 end
return 0
