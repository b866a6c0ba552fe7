-- BROKEN (errors): a correct sliding log that fails on some calls (one
-- µs in 499: a stand-in for a bug on a rare path). Its twin is
-- sliding-log.lua.
-- ARGV: now_us, window_us, limit, request_id
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if now % 499 == 7 then return redis.error_reply('rare path: no such bucket') end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
