#!lua name=two_limits
-- Two limiters in one library, as published libraries often ship them:
-- FCALL per_minute 1 key limit or FCALL per_hour 1 key limit.
local function hit(key, limit, ttl)
  local n = redis.call('INCR', key)
  if n == 1 then redis.call('EXPIRE', key, ttl) end
  if n > tonumber(limit) then return 0 end
  return 1
end

redis.register_function('per_minute', function(keys, args) return hit(keys[1], args[1], 60) end)
redis.register_function{function_name = 'per_hour', callback = function(keys, args) return hit(keys[1], args[1], 3600) end}
