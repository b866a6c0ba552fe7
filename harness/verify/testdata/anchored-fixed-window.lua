-- BROKEN (phases): a fixed window that starts at the key's first hit (like
-- ulule/limiter): a probe, then a burst before and one after probe + W.
-- ARGV: now_us, window_us, limit
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local st = redis.call('HMGET', KEYS[1], 'start', 'n')
local start, n = tonumber(st[1]), tonumber(st[2] or '0')
if not start or now >= start + window then
  start, n = now, 0
end
if n >= limit then return 0 end
redis.call('HSET', KEYS[1], 'start', string.format('%d', start), 'n', n + 1)
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
