-- ratelab bucketed hash counters, after Josiah Carlson's 2014 design: one HASH
-- per key holds, for each limit, the counters of its sub-windows (blocks of
-- `precision`), the window total and the oldest block still counted.
-- Fields per limit, with label "<window_ms>:<precision_ms>":
--   "<label>:"         total of the counted blocks
--   "<label>:o"        the oldest block number still counted
--   "<label>:<block>"  the units accepted in block floor(now / precision)
-- KEYS[1]  the key
-- ARGV[1]  cost (weight)
-- ARGV[2]  now, integer microseconds; "" reads Redis TIME
-- ARGV[3]  n, the number of limits; then n groups of 4:
--          label, window_us, limit, precision_us
-- A limit counts the blocks floor(now/precision) - blocks + 1 .. floor(now/precision),
-- blocks = ceil(window / precision): a block is dropped whole, up to one
-- precision before its oldest unit has been in the window for a full window.
-- Reply: {allowed 0|1, remaining, retry_after_us, now_us}; remaining and the
-- retry are those of the tightest limit.
local key = KEYS[1]
local cost = tonumber(ARGV[1])
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[2])
end
local n = tonumber(ARGV[3])

local function blockfield(prefix, b)
  return prefix .. string.format('%d', b)
end

local state = {}
local remaining = nil
local retry = 0
local longest = 0
for i = 1, n do
  local a = 3 + (i - 1) * 4
  local s = {
    prefix = ARGV[a + 1] .. ':',
    window = tonumber(ARGV[a + 2]),
    limit = tonumber(ARGV[a + 3]),
    precision = tonumber(ARGV[a + 4]),
  }
  s.blocks = math.ceil(s.window / s.precision)
  s.block = math.floor(now / s.precision)
  s.trim_before = s.block - s.blocks + 1
  longest = math.max(longest, s.window)
  state[i] = s

  local oldest = redis.call('HGET', key, s.prefix .. 'o')
  oldest = oldest and tonumber(oldest) or s.trim_before
  -- drop the blocks that have left the window (at most `blocks` of them exist)
  local stale = {}
  for b = oldest, math.min(s.trim_before, oldest + s.blocks) - 1 do
    stale[#stale + 1] = blockfield(s.prefix, b)
  end
  local cur
  if #stale > 0 then
    local counts = redis.call('HMGET', key, unpack(stale))
    local decr = 0
    for _, c in ipairs(counts) do
      if c then decr = decr + tonumber(c) end
    end
    redis.call('HDEL', key, unpack(stale))
    redis.call('HSET', key, s.prefix .. 'o', s.trim_before)
    if decr > 0 then
      cur = redis.call('HINCRBY', key, s.prefix, string.format('%d', -decr))
    else
      cur = tonumber(redis.call('HGET', key, s.prefix) or '0')
    end
  else
    cur = tonumber(redis.call('HGET', key, s.prefix) or '0')
  end
  s.cur = cur

  local left = s.limit - cur
  if cur + cost > s.limit then
    -- when will enough blocks have been dropped? block b goes at (b + blocks) * precision
    local need = cur + cost - s.limit
    local first = math.max(oldest, s.trim_before)
    local fields = {}
    for b = first, s.block do
      fields[#fields + 1] = blockfield(s.prefix, b)
    end
    local counts = {}
    if #fields > 0 then
      counts = redis.call('HMGET', key, unpack(fields))
    end
    local freed = 0
    local wait = s.window
    for j, c in ipairs(counts) do
      if c then
        freed = freed + tonumber(c)
        if freed >= need then
          wait = (first + j - 1 + s.blocks) * s.precision - now
          break
        end
      end
    end
    retry = math.max(retry, wait)
  end
  if remaining == nil or left < remaining then
    remaining = left
  end
end

if retry > 0 then
  return {0, remaining, retry, now}
end

for i = 1, n do
  local s = state[i]
  if s.cur == 0 then
    redis.call('HSET', key, s.prefix .. 'o', s.trim_before)
  end
  redis.call('HINCRBY', key, s.prefix, cost)
  redis.call('HINCRBY', key, blockfield(s.prefix, s.block), cost)
end
-- the longest window: after that long idle, every counter would be dropped
redis.call('PEXPIRE', key, math.ceil(longest / 1000))
return {1, remaining - cost, 0, now}
