-- Sliding-window log, check then act: trim, count, and add when under the
-- limit. Correct as one atomic script (EVAL); sent as separate commands from
-- the client (--client-side), two clients can both count L-1 and both add.
-- KEYS[1] the key; ARGV: limit, window (µs), now (µs), request id
-- Reply: 1 allowed, 0 denied
local key, limit, window, now = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) >= limit then
  return 0
end
redis.call('ZADD', key, now, ARGV[4])
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return 1
