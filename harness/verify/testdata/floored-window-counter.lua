-- BROKEN (search, greedy): a sliding-window counter as often published:
-- every request is counted in its fixed window's counter first, then the
-- previous window's count, weighted by the share of it the trailing window
-- still overlaps and rounded down, is added; over the limit is denied. It
-- says nothing of when to retry. The previous window's hits may all lie at
-- its end: L there, then L at once late in the next window, once the
-- rounded weight has reached 0: 2L within one window. A client that
-- retries as soon as it is denied is counted each time and stays under.
-- KEYS[1]: the base key; the counters are KEYS[1] .. ':' .. window number
-- ARGV[1]: now, ms; ARGV[2]: window, ms; ARGV[3]: limit
-- Reply: 1 allowed, 0 denied.
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local n = math.floor(now / window)
local current_key = KEYS[1] .. ':' .. string.format('%d', n)
local current = redis.call('INCR', current_key)
if current == 1 then
  redis.call('PEXPIRE', current_key, window * 2)
end
local previous = tonumber(redis.call('GET', KEYS[1] .. ':' .. string.format('%d', n - 1)) or '0')
local weighted = math.floor(previous * (window - (now - n * window)) / window)
if weighted + current > limit then
  return 0
end
return 1
