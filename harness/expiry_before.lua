-- ratelab: key expiry on the virtual clock, before a call at virtual time
-- ARGV[1] (integer µs). KEYS[1] is the companion hash of one key tag:
--   "k:<key>" -> "<when_ms> <e_ms>": the key expires (as Redis expires keys:
--               gone once now_ms > when_ms) at virtual when_ms; e_ms is the
--               real PEXPIREAT this script last gave it
--   "t1"      -> the real time (ms) of the last run of this script
-- Keys whose virtual deadline has passed are removed (UNLINK); the others get
-- back the TTL they have left in virtual time (+1 ms: the call runs within
-- the same millisecond or the next, inside MULTI), so the call sees them as
-- Redis would. Between calls every tracked key is persistent: nothing
-- expires on the wall clock.
local comp = KEYS[1]
local vms = math.floor(tonumber(ARGV[1]) / 1000)
local t = redis.call('TIME')
local t1 = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local f = redis.call('HGETALL', comp)
for i = 1, #f, 2 do
  local name = f[i]
  if string.sub(name, 1, 2) == 'k:' then
    local key = string.sub(name, 3)
    local when = tonumber(string.match(f[i + 1], '^(%-?%d+)'))
    if vms > when then
      redis.call('UNLINK', key)
      redis.call('HDEL', comp, name)
    else
      local e = t1 + (when - vms) + 1
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
