-- BROKEN (overload): denied requests are logged too, so under sustained
-- overload the log never drains and legitimate traffic starves.
-- ARGV: now_us, window_us, limit, request_id
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local used = redis.call('ZCARD', KEYS[1])
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
if used >= limit then return 0 end
return 1
