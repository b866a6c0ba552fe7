-- A fixed window that starts at the key's first hit, as many small
-- libraries write it: INCR, PEXPIRE on the first hit, and a Lua false for
-- a denial (the client sees nil). It reads no clock: the key's TTL is the
-- window.
--
-- KEYS[1]  the client's key
-- ARGV[1]  window, milliseconds
-- ARGV[2]  limit, requests per window
-- Reply: true (1) allowed, false (nil) denied.
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
if count > tonumber(ARGV[2]) then
  return false
end
return true
