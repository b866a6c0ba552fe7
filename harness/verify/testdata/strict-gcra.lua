-- GCRA in the manner of the published single-script limiters (a
-- theoretical arrival time per key, an emission interval of window/limit),
-- strict: a burst of 1, so the delay variation tolerance is one interval
-- and a request of cost n needs n intervals of headroom. Never more than L
-- in any W; a request of cost 2 or more is never admitted.
-- KEYS[1]: the key's TAT (µs)
-- ARGV: now_us, window_us, limit, cost
-- Reply: {allowed (1/0), remaining, retry_after_us (-1 when allowed)}
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2]) / tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local burst = 1
local tolerance = interval * burst
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval * cost
local allow_at = new_tat - tolerance
if allow_at > now then
  return {0, 0, string.format('%d', allow_at - now)}
end
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
local remaining = math.floor((tolerance - (new_tat - now)) / interval)
return {1, remaining, -1}
