-- A sliding log with the same penalty (twin of penalty-fixed-window.lua):
-- at most L accepted in any (t-W, t]; a request over the limit blocks the
-- key for a window. The block only denies more: it holds.
-- ARGV: now_us, window_us, limit, request_id
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local block = KEYS[1] .. ':block'
local blocked_until = tonumber(redis.call('GET', block) or '0')
if now < blocked_until then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  redis.call('SET', block, string.format('%d', now + window), 'PX', math.ceil(window / 1000))
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
