-- ratelab sliding-window log: one sorted set per key, score = accepted time in
-- microseconds, one member per accepted cost unit.
-- KEYS[1]  the key
-- ARGV[1]  limit (cost units per window)
-- ARGV[2]  window, microseconds
-- ARGV[3]  cost
-- ARGV[4]  now, integer microseconds; "" reads Redis TIME
-- ARGV[5]  request nonce, unique per call (members are "<now>:<nonce>:<i>")
-- Reply: {allowed 0|1, remaining, retry_after_us, now_us}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now_s = ARGV[4]
if now_s == '' then
  local t = redis.call('TIME')
  now_s = t[1] .. string.format('%06d', tonumber(t[2]))
end
local now = tonumber(now_s)

-- entries at or before now - window have left the trailing window (now - window, now]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local used = redis.call('ZCARD', key)

if used + cost > limit then
  -- the request fits once the (used + cost - limit)-th oldest entry has left
  local nth = redis.call('ZRANGE', key, used + cost - limit - 1, used + cost - limit - 1, 'WITHSCORES')
  local retry = 1
  if nth[2] then
    retry = tonumber(nth[2]) + window - now
  end
  return {0, limit - used, retry, now}
end

-- one member per unit, added 1000 at a time: unpack of one table of the
-- whole cost fails past Lua's stack limit (~8000 values)
local prefix = now_s .. ':' .. ARGV[5] .. ':'
local i = 1
while i <= cost do
  local args = {}
  for j = i, math.min(cost, i + 999) do
    args[#args + 1] = now_s
    args[#args + 1] = prefix .. j
  end
  redis.call('ZADD', key, unpack(args))
  i = i + 1000
end
-- the newest entry leaves the window after one window: idle keys vanish then
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return {1, limit - used - cost, 0, now}
