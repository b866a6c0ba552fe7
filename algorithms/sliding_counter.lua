-- ratelab sliding-window counter (Cloudflare): one integer counter per key
-- and window number n = floor(now / window); the trailing window (now -
-- window, now] is estimated as the previous window's count weighted by the
-- share of it the trailing window still overlaps, plus the current count:
--   estimate = prev * (window - elapsed) / window + cur,  elapsed = now - n*window
-- A request is accepted when estimate + cost <= limit. The comparison is
-- done scaled by window, in integers: prev*(window-elapsed) + (cur+cost)*window
-- <= limit*window (exact while limit*window < 2^53, e.g. 100000 per 24 h).
-- KEYS[1]  the key's base name; the counters are "<base>:<n>" and
--          "<base>:<n-1>", which share the base's hash tag (one Cluster slot)
-- ARGV[1]  limit (cost units per window)
-- ARGV[2]  window, microseconds
-- ARGV[3]  cost
-- ARGV[4]  now, integer microseconds; "" reads Redis TIME
-- Reply: {allowed 0|1, remaining, retry_after_us, now_us}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now
if ARGV[4] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[4])
end

local n = math.floor(now / window)
local elapsed = now - n * window
local cur_key = KEYS[1] .. ':' .. string.format('%d', n)
local prev_key = KEYS[1] .. ':' .. string.format('%d', n - 1)
local cur = tonumber(redis.call('GET', cur_key) or '0')
local prev = tonumber(redis.call('GET', prev_key) or '0')

-- the estimate of the trailing window, times window
local used = prev * (window - elapsed) + cur * window
local cap = limit * window

if used + cost * window > cap then
  -- when would it fit, with no other traffic?
  local retry
  if cur + cost <= limit then
    -- later in this window, once the previous window's weight has shrunk
    -- enough (prev > 0 here, or it would have fit)
    local e = window - math.floor((limit - cur - cost) * window / prev)
    retry = n * window + e - now
  else
    -- next window, where this window's count becomes the weighted one
    local e = 0
    if cur > 0 then
      e = math.max(window - math.floor((limit - cost) * window / cur), 0)
    end
    retry = (n + 1) * window + e - now
  end
  return {0, math.max(math.floor((cap - used) / window), 0), math.max(retry, 1), now}
end

redis.call('INCRBY', cur_key, cost)
-- window n's counter is read as the previous one until window n+1 ends
redis.call('PEXPIRE', cur_key, math.ceil(((n + 2) * window - now) / 1000))
return {1, math.floor((cap - used - cost * window) / window), 0, now}
