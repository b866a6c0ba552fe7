-- CORRECTED twin of ttl-when-none.lua: the same counter, allowing half the
-- limit per window from the first hit; any window overlaps at most two of
-- them, so it never accepts more than the limit. Reads no clock.
-- KEYS[1]: the client's counter
-- ARGV[1]: max requests per window; ARGV[2]: window length in milliseconds
-- Reply: {allowed 0|1, retry_after_ms}
local count = redis.call('INCR', KEYS[1])
if redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if count > math.floor(tonumber(ARGV[1]) / 2) then
  return {0, redis.call('PTTL', KEYS[1])}
end
return {1, 0}
