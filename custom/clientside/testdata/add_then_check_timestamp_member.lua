-- Add then check, broken: the member is the timestamp alone, as in many
-- published sliding logs. Requests at the same microsecond add the same
-- member, so they count once and all pass (atomic or not), and a take-back
-- removes another request's entry.
-- KEYS[1] the key; ARGV: limit, window (µs), now (µs)
-- Reply: 1 allowed, 0 denied
local key, limit, window, now = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
redis.call('ZADD', key, now, ARGV[3])
if redis.call('ZCARD', key) > limit then
  redis.call('ZREM', key, ARGV[3])
  return 0
end
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return 1
