-- BROKEN (boundary, inside a denied burst): a fixed window named by a clock
-- that runs lag µs behind (an application server's clock): its boundaries
-- fall lag after the aligned ones, inside bursts the limiter had been
-- denying since the window filled. It accepts again mid-burst: a thinned
-- burst finds that with its probes.
-- ARGV: now_us, window_us, limit, lag_us
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local key = KEYS[1] .. ':' .. string.format('%d', math.floor((now - tonumber(ARGV[4])) / window))
local n = tonumber(redis.call('GET', key) or '0')
if n >= limit then return 0 end
redis.call('INCR', key)
redis.call('PEXPIRE', key, math.ceil(window / 1000))
return 1
