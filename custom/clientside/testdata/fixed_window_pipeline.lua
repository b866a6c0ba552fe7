-- Fixed window, pipelined: INCRBY and PEXPIRE in one round trip on the
-- window's own key ({key}:{floor(now_ms / window_ms)}). INCRBY is atomic,
-- so concurrent clients get distinct counts: no race beyond the fixed
-- window's own flaw, 2L across a boundary.
-- KEYS[1] the window's key; ARGV: limit, window (ms), cost
-- Reply: 1 allowed, 0 denied
local r = redis.pipeline({
  {'INCRBY', KEYS[1], ARGV[3]},
  {'PEXPIRE', KEYS[1], ARGV[2]},
})
if r[1] > tonumber(ARGV[1]) then
  return 0
end
return 1
