-- CORRECT twin (weighted, large cost): one member per unit still, added
-- 1000 at a time, so no unpack() sees more than 2000 values.
-- ARGV: now_us, window_us, limit, request_id, cost
local now, window, limit, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local used = redis.call('ZCARD', KEYS[1])
if used + cost > limit then return {0, limit - used} end
for first = 1, cost, 1000 do
  local args = {}
  for i = first, math.min(cost, first + 999) do
    args[#args + 1] = ARGV[1]
    args[#args + 1] = ARGV[4] .. ':' .. i
  end
  redis.call('ZADD', KEYS[1], unpack(args))
end
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return {1, limit - used - cost}
