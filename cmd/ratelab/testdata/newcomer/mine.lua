-- A fixed window as a tutorial would write it: the limit and the window
-- (seconds) come in ARGV, the window starts at the key's first hit.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local current = redis.call('INCR', key)
if current == 1 then
  redis.call('EXPIRE', key, window)
end
if current > limit then
  return 0
end
return 1
