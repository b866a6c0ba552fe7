-- BROKEN: the same fixed window from the first hit, with the TTL in whole
-- seconds (EXPIRE), as many tutorials write it. Reads no clock.
-- KEYS[1]: the client's counter
-- ARGV[1]: max requests per window; ARGV[2]: window length in seconds
local requests = tonumber(redis.call('INCR', KEYS[1]))
if requests == 1 then
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
end
if requests > tonumber(ARGV[1]) then
  return 0
else
  return 1
end
