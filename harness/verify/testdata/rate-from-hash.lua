-- A sliding log whose limit and window live in a hash (KEYS[2]) that the
-- application writes once per key, before the first request (see
-- set-rate.lua): as published limiters that read their rate from Redis
-- do. Without the hash it fails open: every request passes.
-- KEYS: the log, the hash. ARGV: now_us, window_us, limit, request_id
local now = tonumber(ARGV[1])
local cfg = redis.call('HMGET', KEYS[2], 'limit', 'window_us')
local limit, window = tonumber(cfg[1]), tonumber(cfg[2])
if not limit or not window then
  return 1
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
