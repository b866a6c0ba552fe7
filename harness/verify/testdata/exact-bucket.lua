-- A leaky bucket (GCRA with burst 1, one request per W/L) without jitter
-- (twin of early-bucket.lua): a request passes only once the bucket is
-- empty: never more than L in any W.
-- ARGV: now_us, window_us, limit
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local jitter = 0
local interval = window / limit
local empty_at = tonumber(redis.call('GET', KEYS[1]) or now)
if empty_at < now then empty_at = now end
if empty_at - now > jitter then return 0 end
redis.call('SET', KEYS[1], string.format('%d', math.ceil(empty_at + interval)), 'PX', math.ceil((empty_at + interval - now) / 1000))
return 1
