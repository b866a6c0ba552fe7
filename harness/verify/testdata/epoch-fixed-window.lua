-- BROKEN (boundary): a fixed window on floor(now / window): 2L across a boundary.
-- ARGV: now_us, window_us, limit
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local key = KEYS[1] .. ':' .. string.format('%d', math.floor(now / window))
local n = tonumber(redis.call('GET', key) or '0')
if n >= limit then return 0 end
redis.call('INCR', key)
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return 1
