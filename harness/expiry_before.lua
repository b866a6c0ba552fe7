-- ratelab: key expiry on the virtual clock, before a call at virtual time
-- ARGV[1] (integer µs). KEYS[1] is the companion hash of one key tag:
--   "k:<key>" -> "<when_ms> <e_ms>": the key expires (as Redis expires keys:
--               gone once now_ms > when_ms) at virtual when_ms; e_ms is the
--               real PEXPIREAT this script last gave it
--   "t1"      -> the real time (ms) of the last run of this script
-- Keys whose virtual deadline has passed are removed (UNLINK); the others get
-- back the TTL they have left in virtual time plus 1 s (a guard: Redis's
-- cached command clock, on which t1 is read, can lag the clock it checks
-- expiry on by more than a millisecond inside a long MULTI; measured), so
-- the call sees them alive with a TTL, as Redis would. Between calls every tracked key is persistent: nothing
-- expires on the wall clock.
local comp = KEYS[1]
local vms = math.floor(tonumber(ARGV[1]) / 1000)
-- t1 is read on the clock Redis bases relative expiries on (its cached
-- command time, which can lag TIME): a TTL set on the companion, read back
local f = redis.call('HGETALL', comp)
redis.call('HSET', comp, 't1', '0')
redis.call('PEXPIRE', comp, 1000000000)
local t1 = redis.call('PEXPIRETIME', comp) - 1000000000
redis.call('PERSIST', comp)
for i = 1, #f, 2 do
  local name = f[i]
  if string.sub(name, 1, 2) == 'k:' then
    local key = string.sub(name, 3)
    local when = tonumber(string.match(f[i + 1], '^(%-?%d+)'))
    if vms > when then
      redis.call('UNLINK', key)
      redis.call('HDEL', comp, name)
    else
      local e = t1 + (when - vms) + 1000
      if redis.call('PEXPIREAT', key, e) == 1 then
        redis.call('HSET', comp, name, string.format('%d %d', when, e))
      else
        redis.call('HDEL', comp, name)
      end
    end
  end
end
redis.call('HSET', comp, 't1', string.format('%d', t1))
return 0
