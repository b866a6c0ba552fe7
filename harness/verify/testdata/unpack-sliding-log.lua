-- BROKEN (weighted, large cost): the whole cost's members go to one ZADD
-- through unpack(), as published weighted logs do; past Lua's stack limit
-- (a few thousand values) the call fails with "too many results to unpack".
-- ARGV: now_us, window_us, limit, request_id, cost
local now, window, limit, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local used = redis.call('ZCARD', KEYS[1])
if used + cost > limit then return {0, limit - used} end
local args = {}
for i = 1, cost do
  args[#args + 1] = ARGV[1]
  args[#args + 1] = ARGV[4] .. ':' .. i
end
redis.call('ZADD', KEYS[1], unpack(args))
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return {1, limit - used - cost}
