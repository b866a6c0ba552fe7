-- ratelab: key expiry on the virtual clock, before a call at virtual time
-- ARGV[1] (integer µs). KEYS[1] is the companion hash of one key tag:
--   "k:<key>" -> "<when_ms>": the key expires at virtual when_ms, as Redis
--               expires keys (gone once now_ms > when_ms)
--   "t1"      -> Redis's command clock (ms) when this script last ran
-- Tracked keys whose virtual deadline has passed are removed (UNLINK). All
-- tracked keys are persistent in Redis: nothing expires on the wall clock.
local comp = KEYS[1]
local vms = math.floor(tonumber(ARGV[1]) / 1000)
local f = redis.call('HGETALL', comp)
for i = 1, #f, 2 do
  local name = f[i]
  if string.sub(name, 1, 2) == 'k:' and vms > tonumber(f[i + 1]) then
    redis.call('UNLINK', string.sub(name, 3))
    redis.call('HDEL', comp, name)
  end
end
-- t1 is read on the clock Redis bases relative expiries on (its cached
-- command clock, which can lag TIME): a TTL set on the companion, read back
-- (the companion itself keeps that TTL of 10^9 ms: it is removed with the
-- run's keys long before)
if #f == 0 then redis.call('HSET', comp, 't1', '0') end
redis.call('PEXPIRE', comp, 1000000000)
local t1 = redis.call('PEXPIRETIME', comp) - 1000000000
redis.call('HSET', comp, 't1', string.format('%d', t1))
return 0
