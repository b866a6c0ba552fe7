-- A token bucket refilled whole once per interval, reading the server's
-- clock itself. Two keys: the tokens and the time of the last refill. It
-- answers with the tokens left after this request, negative when there
-- were too few (the request is then denied and takes nothing).
--
-- KEYS[1]  the tokens
-- KEYS[2]  the last refill, microseconds
-- ARGV[1]  capacity (the limit)
-- ARGV[2]  refill interval, microseconds
-- ARGV[3]  cost
-- Reply: tokens left (>= 0 allowed, < 0 denied).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local capacity, interval, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tokens = tonumber(redis.call('GET', KEYS[1]))
local last = tonumber(redis.call('GET', KEYS[2]))
if tokens == nil or last == nil then
  tokens, last = capacity, now
elseif now - last >= interval then
  tokens = capacity
  last = last + math.floor((now - last) / interval) * interval
end
local left = tokens - cost
if left >= 0 then
  tokens = left
end
local ttl = math.ceil(interval / 1000) * 2
redis.call('SET', KEYS[1], tokens, 'PX', ttl)
redis.call('SET', KEYS[2], string.format('%d', last), 'PX', ttl)
return left
