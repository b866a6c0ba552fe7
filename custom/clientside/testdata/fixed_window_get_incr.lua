-- Fixed window, check then act, broken client-side: GET the count, and
-- INCRBY when under the limit, in two round trips: clients that read the
-- same count all increment.
-- KEYS[1] the window's key; ARGV: limit, window (ms), cost
-- Reply: 1 allowed, 0 denied
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n + tonumber(ARGV[3]) > tonumber(ARGV[1]) then
  return 0
end
redis.pipeline({
  {'INCRBY', KEYS[1], ARGV[3]},
  {'PEXPIRE', KEYS[1], ARGV[2]},
})
return 1
