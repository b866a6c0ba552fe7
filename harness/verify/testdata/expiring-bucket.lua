-- BROKEN (expiry): a token bucket of `capacity` tokens refilled at `rate`
-- tokens per second, that drops a key idle for 2 seconds to save memory:
-- when the bucket takes longer than that to fill, the key comes back full.
-- A client that empties it, waits just past 2 s and empties it again gets
-- a full bucket every 2 s (15x the limit at 60 per minute).
-- ARGV: now_us, capacity, rate (tokens per second), requested
local now = tonumber(ARGV[1])
local capacity, rate, requested = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(b[1]), tonumber(b[2])
if not tokens then tokens, ts = capacity, now end
tokens = math.min(capacity, tokens + (now - ts) / 1e6 * rate)
local allowed = tokens >= requested
if allowed then tokens = tokens - requested end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', string.format('%d', now))
redis.call('EXPIRE', KEYS[1], 2)
if allowed then return 1 end
return 0
