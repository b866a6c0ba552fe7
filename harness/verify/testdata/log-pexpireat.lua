-- CORRECTED twin of epoch-pxat.lua: a sliding log whose key expires at an
-- absolute instant, one window after its newest entry (PEXPIREAT from the
-- clock argument). Correct on a Redis whose clock reads ARGV[1].
-- KEYS[1]: the client's log; ARGV[1]: now in ms; ARGV[2]: window in ms;
-- ARGV[3]: limit; ARGV[4]: a unique request id
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIREAT', KEYS[1], now + window)
return 1
