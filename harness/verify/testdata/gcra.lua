-- GCRA with burst 1: a request passes once its theoretical arrival time
-- has come; never more than L in any W (twin of gcra-rounding.lua).
-- ARGV: now_us, window_us, limit
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local T = window / limit
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
if tat > now then return 0 end
redis.call('SET', KEYS[1], string.format('%d', tat + T), 'PX', math.ceil(window / 1000))
return 1
