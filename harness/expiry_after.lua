-- ratelab: key expiry on the virtual clock, after a call at virtual time
-- ARGV[1] (integer µs); see expiry_before.lua for the companion hash KEYS[1].
-- KEYS[2..] are the call's keys; ARGV[2], when not empty, is a SCAN pattern
-- for the keys of this tag the limiter writes besides them. Every key was
-- persistent before the call, so a TTL on it now was set by the call: its
-- virtual deadline is the call's virtual time plus that TTL (read as
-- PEXPIRETIME - t1: the call's clock was at t1 or later, so never shorter
-- than the TTL it set), and it is made persistent again. A key without a
-- TTL keeps the deadline it had (none: it never expires); a key gone is no
-- longer tracked. Returns how many scanned keys were not among KEYS[2..].
local comp = KEYS[1]
local vms = math.floor(tonumber(ARGV[1]) / 1000)
local t1 = tonumber(redis.call('HGET', comp, 't1') or '0')
local seen, keys = {}, {}
local function add(k)
  if not seen[k] then
    seen[k] = true
    keys[#keys + 1] = k
    return true
  end
  return false
end
for i = 2, #KEYS do add(KEYS[i]) end
local found = 0
if ARGV[2] ~= '' then
  local cur = '0'
  repeat
    local r = redis.call('SCAN', cur, 'MATCH', ARGV[2], 'COUNT', 1000)
    cur = r[1]
    for _, k in ipairs(r[2]) do
      if add(k) then found = found + 1 end
    end
  until cur == '0'
end
for _, k in ipairs(keys) do
  local px = redis.call('PEXPIRETIME', k)
  if px >= 0 then
    redis.call('HSET', comp, 'k:' .. k, string.format('%d', vms + (px - t1)))
    redis.call('PERSIST', k)
  elseif px == -2 then
    redis.call('HDEL', comp, 'k:' .. k)
  end
end
return found
