-- A fixed window from the key's first hit, reading no clock and no
-- argument: 10 requests per 60 s, the window's end is the key's TTL.
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then
  redis.call('EXPIRE', KEYS[1], 60)
end
if hits > 10 then
  return 0
end
return 1
