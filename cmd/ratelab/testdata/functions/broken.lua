#!lua name=broken
local function hit(keys, args)
  local n = redis.call('INCR', keys[1]
  return n
end
redis.register_function('hit', hit)
