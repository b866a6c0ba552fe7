-- CORRECTED twin of floored-window-counter.lua: two fixed windows, only
-- accepted requests counted, and the previous window counted whole while
-- its last accepted request is less than a window old (it may sit at the
-- window's end: weighting it by overlap is what let 2L through), not at
-- all after. Any trailing window holds requests of two fixed windows at
-- most, and when it holds one of the previous window's, that window was
-- counted whole at its last acceptance: at most the limit.
-- KEYS[1]: the base key; each window's HASH (n: count, last: ms) is
--          KEYS[1] .. ':' .. window number
-- ARGV[1]: now, ms; ARGV[2]: window, ms; ARGV[3]: limit
-- Reply: 1 allowed, 0 denied.
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local n = math.floor(now / window)
local current_key = KEYS[1] .. ':' .. string.format('%d', n)
local current = tonumber(redis.call('HGET', current_key, 'n') or '0')
local prev = redis.call('HMGET', KEYS[1] .. ':' .. string.format('%d', n - 1), 'n', 'last')
local previous = 0
if prev[2] and tonumber(prev[2]) > now - window then
  previous = tonumber(prev[1])
end
if previous + current + 1 > limit then
  return 0
end
redis.call('HINCRBY', current_key, 'n', 1)
redis.call('HSET', current_key, 'last', ARGV[1])
redis.call('PEXPIRE', current_key, window * 2)
return 1
