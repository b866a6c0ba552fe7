-- CORRECTED twin of fw-first-hit.lua: every request, accepted or not, pushes
-- the counter's expiry a whole window out, so the count restarts only after
-- a window of silence; accepted requests in any window never exceed the
-- limit (it starves a client that never pauses). Reads no clock.
-- KEYS[1]: the client's counter
-- ARGV[1]: max requests per window; ARGV[2]: window length in milliseconds
local current = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if current > tonumber(ARGV[1]) then
  return 0
end
return 1
