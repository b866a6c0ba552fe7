-- BROKEN twin, in a way no replay reproduces: a sliding-window log that lets
-- the first 60 calls through whatever their key (a "warm-up" counter kept
-- in one global key, outside KEYS). The trials that run first exceed the
-- limit; the same requests replayed on fresh keys hold (the warm-up is
-- spent), so the violation is not the limiter's answer to its input.
-- ARGV: now_us, window_us, limit, request_id
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('INCR', 'warm-up-free:calls') <= 60 then return 1 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
