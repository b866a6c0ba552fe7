-- A sliding-window log: one sorted-set member per accepted request.
-- KEYS[1] the log; ARGV[1] now, µs; ARGV[2] window, µs; ARGV[3] limit;
-- ARGV[4] a member unique to the request. Reply: 1 allowed, 0 denied.
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
