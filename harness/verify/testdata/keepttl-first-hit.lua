-- BROKEN: a counter stored with SET: created with PX, then rewritten with
-- KEEPTTL so that its window is kept; read with GETEX. The window starts at
-- the first hit: 2L across its end. Reads no clock.
-- KEYS[1]: the client's counter
-- ARGV[1]: max requests per window; ARGV[2]: window length in milliseconds
local v = redis.call('GETEX', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], 1, 'PX', ARGV[2])
  return 1
end
if tonumber(v) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[1], tonumber(v) + 1, 'KEEPTTL')
return 1
