-- BROKEN: a counter whose TTL is set when PTTL says there is none (so a key
-- that lost its TTL gets one again), with Retry-After read from PTTL. The
-- window still starts at the first hit: 2L across its end. Reads no clock.
-- KEYS[1]: the client's counter
-- ARGV[1]: max requests per window; ARGV[2]: window length in milliseconds
-- Reply: {allowed 0|1, retry_after_ms}
local count = redis.call('INCR', KEYS[1])
if redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if count > tonumber(ARGV[1]) then
  return {0, redis.call('PTTL', KEYS[1])}
end
return {1, 0}
