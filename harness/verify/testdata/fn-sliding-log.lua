#!lua name=ratelimit_log
-- A sliding log in the style of the Functions limiters people publish: a
-- sorted set of the accepted requests' times (µs, from Redis TIME), the
-- ones a window old trimmed before each decision. FCALL sliding_log 1 key
-- limit window_s request_id; 1 allowed, 0 denied.
local function sliding_log(keys, args)
  local key = keys[1]
  local limit = tonumber(args[1])
  local window_us = tonumber(args[2]) * 1000000
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window_us)
  if redis.call('ZCARD', key) >= limit then
    return 0
  end
  redis.call('ZADD', key, now, t[1] .. '.' .. t[2] .. '-' .. args[3])
  redis.call('PEXPIRE', key, window_us / 1000)
  return 1
end

redis.register_function{
  function_name = 'sliding_log',
  callback = sliding_log,
}
