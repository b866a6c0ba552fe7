-- BROKEN (dense): GCRA with burst 1 that rounds the wait to the nearest
-- emission interval, so a request half an interval early passes: L+1 in
-- W - T/2 under a dense stream. Bursts never show it (one per instant).
-- ARGV: now_us, window_us, limit
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local T = window / limit
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
if math.floor((tat - now) / T + 0.5) > 0 then return 0 end
redis.call('SET', KEYS[1], string.format('%d', tat + T), 'PX', math.ceil(window / 1000))
return 1
