-- Sliding-window log in MULTI/EXEC without WATCH, broken: the count is read
-- before the transaction, so the transaction is atomic but the decision is
-- not: clients that counted the same number all add.
-- KEYS[1] the key; ARGV: limit, window (µs), now (µs), request id
-- Reply: 1 allowed, 0 denied
local key, limit, window, now = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('ZCOUNT', key, '(' .. (now - window), '+inf') >= limit then
  return 0
end
redis.transaction({
  {'ZREMRANGEBYSCORE', key, '-inf', now - window},
  {'ZADD', key, now, ARGV[4]},
  {'PEXPIRE', key, math.ceil(window / 1000)},
})
return 1
