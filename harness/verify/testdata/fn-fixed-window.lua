#!lua name=ratelimit_fixed
-- A fixed window in the style of the Functions limiters people publish:
-- one counter per key and aligned window (the window's number from Redis
-- TIME in the counter's name), INCR, then EXPIRE when the counter is new.
-- FCALL fixed_window 1 key limit window_s; 1 allowed, 0 denied.
local function fixed_window(keys, args)
  local limit = tonumber(args[1])
  local window = tonumber(args[2])
  local now = redis.call('TIME')
  local counter = keys[1] .. ':' .. math.floor(tonumber(now[1]) / window)
  local count = redis.call('INCR', counter)
  if count == 1 then
    redis.call('EXPIRE', counter, window)
  end
  if count > limit then
    return 0
  end
  return 1
end

redis.register_function('fixed_window', fixed_window)
