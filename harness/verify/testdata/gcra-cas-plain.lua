-- GCRA with burst = limit whose state is the key's TTL: the key lives
-- until the theoretical arrival time (TAT), so PTTL is TAT - now. As
-- application code runs it: WATCH the key, read PTTL, decide in the
-- client, then set the key with PX in MULTI/EXEC, which fails when
-- another client changed it in between: a compare-and-swap of plain
-- commands (twin of gcra-cas-eval.lua, whose CAS is one EVAL).
-- Run client-side. ARGV: window_ms, limit
local window, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('WATCH', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then left = 0 end
local new = left + window / limit
if new > window then
  redis.call('UNWATCH')
  return 0
end
if redis.transaction({{'SET', KEYS[1], 1, 'PX', math.ceil(new)}}) then return 1 end
return 0
