-- CORRECTED twin of keepttl-first-hit.lua: the same SET ... KEEPTTL
-- counter, but a client that reaches the limit is blocked for good: its
-- counter is made persistent (GETEX ... PERSIST), so it never gets a second
-- window. Holds (and starves whoever reaches the limit). Reads no clock.
-- KEYS[1]: the client's counter
-- ARGV[1]: max requests per window; ARGV[2]: window length in milliseconds
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], 1, 'PX', ARGV[2])
  return 1
end
if tonumber(v) >= tonumber(ARGV[1]) then
  redis.call('GETEX', KEYS[1], 'PERSIST')
  return 0
end
redis.call('SET', KEYS[1], tonumber(v) + 1, 'KEEPTTL')
if tonumber(v) + 1 >= tonumber(ARGV[1]) then
  redis.call('PERSIST', KEYS[1])
end
return 1
