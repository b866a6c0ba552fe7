-- BROKEN (same-instant, concurrent): the timestamp is the member, so requests
-- at one instant overwrite each other and are never counted twice (seed 000's caller does this).
-- ARGV: now_us, window_us, limit
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
