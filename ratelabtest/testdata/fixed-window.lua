-- BROKEN twin, in the style of the fixed-window limiters many libraries
-- publish (envoy's, upstash's): one counter per window, named by the
-- caller from its clock. 2L requests pass in a moment that straddles a
-- window boundary.
-- KEYS[1] this window's counter (caller: id .. ':' .. floor(now_ms / W))
-- ARGV[1] window, ms; ARGV[2] limit.
-- Reply: 1 allowed, 0 denied.
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
if count > tonumber(ARGV[2]) then
  return 0
end
return 1
