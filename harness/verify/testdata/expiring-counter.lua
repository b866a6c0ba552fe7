-- BROKEN twin, in the style of the fixed-window limiters most libraries
-- publish: one counter per key, expiring a window after its first hit.
-- 2L requests pass in a moment that straddles the counter's expiry.
-- KEYS[1] the counter; ARGV[1] window, ms; ARGV[2] limit.
-- Reply: 1 allowed, 0 denied.
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
if count > tonumber(ARGV[2]) then
  return 0
end
return 1
