-- BROKEN (boundary): a fixed window aligned to the epoch, its counter
-- created with SET NX PXAT at the window's end (an absolute expiry from the
-- clock argument): 2L across a boundary.
-- KEYS[1]: the client's key; ARGV[1]: now in ms; ARGV[2]: window in ms;
-- ARGV[3]: limit
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local slot = math.floor(now / window)
local key = KEYS[1] .. ':' .. slot
redis.call('SET', key, 0, 'NX', 'PXAT', (slot + 1) * window)
local n = redis.call('INCR', key)
if n > limit then
  return 0
end
return 1
