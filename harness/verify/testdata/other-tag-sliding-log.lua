-- CORRECT, but its log lives in a key of another hash tag than the call's
-- (the tag renamed), which key expiry on the virtual clock does not
-- emulate: its TTL of one window must not end on the wall clock while a
-- verification runs.
-- ARGV: now_us, window_us, limit, request_id
local key = string.gsub(KEYS[1], '{(.*)}', '{%1:log}')
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) >= limit then return 0 end
redis.call('ZADD', key, ARGV[1], ARGV[4])
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return 1
