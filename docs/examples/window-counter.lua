-- A sliding-window counter: one counter per fixed window, named by the
-- caller from its clock, and the previous window's count weighted by how
-- much of it still overlaps. Two codes mean allowed: 1, and 2 when this
-- request took the last unit; 0 is denied.
--
-- KEYS[1]  this window's counter   (caller: id .. ':' .. floor(now / W))
-- KEYS[2]  the previous window's   (caller: id .. ':' .. floor(now / W) - 1)
-- ARGV[1]  now, milliseconds
-- ARGV[2]  window, milliseconds
-- ARGV[3]  limit
-- Reply: 1 allowed, 2 allowed and the quota now reached, 0 denied.
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
local elapsed = now % window
local estimate = previous * (window - elapsed) / window + current
if estimate + 1 > limit then
  return 0
end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], window * 2)
if estimate + 2 > limit then
  return 2
end
return 1
