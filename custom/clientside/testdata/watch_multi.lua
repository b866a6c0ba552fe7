-- Sliding-window log, optimistic (client-side): WATCH the key, count, and
-- add in MULTI/EXEC; when another client changed the key in between, EXEC
-- is aborted (redis.transaction returns false) and the request tries again
-- from the count. Denied after 16 lost tries.
-- KEYS[1] the key; ARGV: limit, window (µs), now (µs), request id
-- Reply: 1 allowed, 0 denied
local key, limit, window, now = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
for _ = 1, 16 do
  redis.call('WATCH', key)
  if redis.call('ZCOUNT', key, '(' .. (now - window), '+inf') >= limit then
    redis.call('UNWATCH')
    return 0
  end
  local done = redis.transaction({
    {'ZREMRANGEBYSCORE', key, '-inf', now - window},
    {'ZADD', key, now, ARGV[4]},
    {'PEXPIRE', key, math.ceil(window / 1000)},
  })
  if done then
    return 1
  end
end
return 0
