-- A sliding log that answers with the count, and lets the caller compare
-- it with the limit (allowed when count <= limit). Only accepted units are
-- recorded, one member per unit, so the log never holds more than the
-- limit.
--
-- KEYS[1]  the client's key
-- ARGV[1]  now, microseconds
-- ARGV[2]  window, microseconds
-- ARGV[3]  limit
-- ARGV[4]  a request id, unique per request
-- ARGV[5]  cost, units
-- Reply: the units the window would hold with this request.
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local limit, cost = tonumber(ARGV[3]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1]) + cost
if count <= limit then
  for i = 1, cost do
    redis.call('ZADD', KEYS[1], now, ARGV[4] .. ':' .. i)
  end
end
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return count
