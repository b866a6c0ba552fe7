-- BROKEN (weighted): checks room for one unit but records cost units.
-- ARGV: now_us, window_us, limit, request_id, cost
local now, window, limit, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) + 1 > limit then return 0 end
for i = 1, cost do redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4] .. ':' .. i) end
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
