-- BROKEN (isolation): the hash tag is dropped from the key, so every key
-- of the run shares one log.
-- ARGV: now_us, window_us, limit, request_id
local key = string.gsub(KEYS[1], '{.*}', '{shared}')
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) >= limit then return 0 end
redis.call('ZADD', key, ARGV[1], ARGV[4])
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return 1
