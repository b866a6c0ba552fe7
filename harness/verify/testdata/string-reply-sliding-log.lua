-- CORRECT, replying in strings: {tostring(allowed), tostring(remaining)},
-- as published scripts that build their reply with tostring() do. Judged
-- by "reply[1] == 1" it must hold: "1" reads as 1.
-- ARGV: now_us, window_us, limit, request_id
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local used = redis.call('ZCARD', KEYS[1])
if used >= limit then return {'0', tostring(0)} end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return {'1', tostring(limit - used - 1)}
