-- BROKEN (dense): a leaky bucket (GCRA with burst 1, one request per W/L)
-- that forgives 500 ms of client jitter: a request passes when the bucket
-- will be empty within 500 ms. L+1 requests then fit in W - 500 ms.
-- ARGV: now_us, window_us, limit
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local jitter = 500000
local interval = window / limit
local empty_at = tonumber(redis.call('GET', KEYS[1]) or now)
if empty_at < now then empty_at = now end
if empty_at - now > jitter then return 0 end
redis.call('SET', KEYS[1], string.format('%d', math.ceil(empty_at + interval)), 'PX', math.ceil((empty_at + interval - now) / 1000))
return 1
