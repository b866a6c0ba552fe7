-- CORRECTED twin of lagged-fixed-window.lua: a sliding log on the same
-- lagging clock. A clock that is off by a constant moves every entry
-- alike: at most L accepted in any (t-W, t].
-- ARGV: now_us, window_us, limit, request_id, lag_us
local window, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = tonumber(ARGV[1]) - tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
