-- ratelab: key expiry on the virtual clock, after a call at virtual time
-- ARGV[1] (integer µs); see expiry_before.lua for the companion hash KEYS[1].
-- KEYS[2..] are the call's keys; ARGV[2], when not empty, is a SCAN pattern
-- for the keys of this tag the limiter writes besides them. For each key
-- (those, the scanned ones and the tracked ones): no TTL or gone -> not
-- tracked; the TTL expiry_before gave it, unchanged -> same virtual
-- deadline; a TTL set by the call -> virtual deadline = the call's virtual
-- time + the TTL (read as PEXPIRETIME - t1: the call's own clock was at t1
-- or later, so never shorter than the TTL it set). The key is then made
-- persistent. Returns how many scanned keys were not among KEYS[2..].
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
local f = redis.call('HGETALL', comp)
for i = 1, #f, 2 do
  if string.sub(f[i], 1, 2) == 'k:' then add(string.sub(f[i], 3)) end
end
for _, k in ipairs(keys) do
  local name = 'k:' .. k
  local px = redis.call('PEXPIRETIME', k)
  if px < 0 then
    redis.call('HDEL', comp, name)
  else
    local old = redis.call('HGET', comp, name)
    local when, e
    if old then when, e = string.match(old, '^(%-?%d+) (%-?%d+)$') end
    if not (e and tonumber(e) == px) then
      when = vms + (px - t1)
    end
    redis.call('HSET', comp, name, string.format('%d %d', tonumber(when), px))
    redis.call('PERSIST', k)
  end
end
return found
