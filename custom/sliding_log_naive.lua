-- ratelab sliding-log-naive: the sliding-window log of seeds 000 and 001,
-- sent as separate commands from the client, as the seeds warn against:
-- trim, count, decide, then add. Run client-side (every redis.call is its
-- own round trip), two clients can both count L-1 and both add.
-- KEYS[1]  the key (a sorted set, one member per accepted cost unit)
-- ARGV[1]  limit (cost units per window)
-- ARGV[2]  window, microseconds
-- ARGV[3]  cost
-- ARGV[4]  now, integer microseconds
-- ARGV[5]  request id, unique per call (members are "<now>:<id>:<i>")
-- Reply: {allowed 0|1, remaining, retry_after_us (0: unknown), now_us}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local used = redis.call('ZCARD', key)
if used + cost > limit then
  return {0, math.max(limit - used, 0), 0, now}
end
for i = 1, cost do
  redis.call('ZADD', key, now, ARGV[4] .. ':' .. ARGV[5] .. ':' .. i)
end
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return {1, math.max(limit - used - cost, 0), 0, now}
