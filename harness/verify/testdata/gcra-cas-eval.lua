-- GCRA with burst = limit whose state is the key's TTL: the key lives
-- until the theoretical arrival time (TAT), so PTTL is TAT - now. As
-- application code runs it: read PTTL, decide in the client, then store
-- the new TAT with a compare-and-swap, an EVAL that re-reads PTTL and
-- sets the key with PX only if it is still what was read (twin of
-- gcra-cas-plain.lua). Run client-side. ARGV: window_ms, limit
local window, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then left = 0 end
local new = left + window / limit
if new > window then return 0 end
local cas = "local left = redis.call('PTTL', KEYS[1]) if left < 0 then left = 0 end " ..
  "if left ~= tonumber(ARGV[1]) then return 0 end " ..
  "redis.call('SET', KEYS[1], 1, 'PX', ARGV[2]) return 1"
return redis.call('EVAL', cas, 1, KEYS[1], left, math.ceil(new))
