-- CORRECTED twin of forgiving-sliding-log.lua: it counts each key's
-- denials in a row too (a metric), and never lets the count change what
-- it accepts: at most L in any (t-W, t].
-- ARGV: now_us, window_us, limit, request_id
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local denied = KEYS[1] .. ':denied'
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  redis.call('INCR', denied)
  redis.call('PEXPIRE', denied, math.ceil(window / 1000))
  return 0
end
redis.call('DEL', denied)
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
