-- Sliding-window log, add then check (safe client-side): add this
-- request's own member first, then count; over the limit, take the member
-- back. Every accepted request counted itself and every request accepted
-- before it, whatever came in between, so no window ever holds more than
-- the limit (concurrent requests may be denied together: safe, not exact).
-- KEYS[1] the key; ARGV: limit, window (µs), now (µs), request id
-- Reply: 1 allowed, 0 denied
local key, limit, window, now = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local member = ARGV[3] .. ':' .. ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
redis.call('ZADD', key, now, member)
if redis.call('ZCARD', key) > limit then
  redis.call('ZREM', key, member)
  return 0
end
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return 1
