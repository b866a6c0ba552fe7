-- A fixed window whose limit was written as 1 instead of ARGV[3]: one
-- request per window passes, whatever the limit (twin: sliding-log.lua).
-- ARGV: now_us, window_us, limit, request_id
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local key = KEYS[1] .. ':' .. math.floor(now / window)
local n = redis.call('INCR', key)
if n == 1 then
  redis.call('PEXPIRE', key, math.ceil(window / 1000))
end
if n > 1 then return 0 end
return 1
