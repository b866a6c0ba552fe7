-- A limiter stuck closed: it answers every request "denied". It never
-- accepts more than L in W, and starves every client (twin:
-- sliding-log.lua). ARGV: now_us, window_us, limit, request_id
redis.call('SET', KEYS[1], ARGV[1], 'PX', math.ceil(tonumber(ARGV[2]) / 1000))
return 0
