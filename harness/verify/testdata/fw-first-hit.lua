-- BROKEN (phases, boundary): fixed-window rate limiter whose window starts
-- at a key's first request (the counter's PEXPIRE is set once, when it is
-- created). A client that sends L at the end of a window and L right after
-- it gets 2L in much less than one window. Reads no clock.
-- KEYS[1]: the client's counter
-- ARGV[1]: max requests per window; ARGV[2]: window length in milliseconds
local current = redis.call('INCR', KEYS[1])
if current == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if current > tonumber(ARGV[1]) then
  return 0
end
return 1
