-- Two limits in one hash, in the manner of the published multi-limit
-- counters (one counter per limit, each in a fixed window named by the
-- client's clock): a request passes when every counter has room, and
-- counts in all of them. Each window resets at its boundary, so each
-- limit lets up to twice its count through in one window's length.
-- KEYS[1]: the hash of counters, fields "<window_ms>:<window number>"
-- ARGV: now_ms, limit1, window1_ms, limit2, window2_ms, cost
-- Reply: 1 allowed, 0 denied
local now, cost = tonumber(ARGV[1]), tonumber(ARGV[6])
local fields, longest = {}, 0
for i = 2, 4, 2 do
  local limit, window = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  local field = ARGV[i + 1] .. ':' .. math.floor(now / window)
  local used = tonumber(redis.call('HGET', KEYS[1], field) or '0')
  if used + cost > limit then
    return 0
  end
  fields[#fields + 1] = field
  if window > longest then longest = window end
end
for _, field in ipairs(fields) do
  redis.call('HINCRBY', KEYS[1], field, cost)
end
redis.call('PEXPIRE', KEYS[1], longest)
return 1
