-- BROKEN (cautious): a fixed window from the key's first hit (INCR, and
-- PEXPIRE on the first hit), with a block key as login throttles keep it:
-- once the hits of a window exceed the limit the key is blocked for a
-- block duration, and a blocked key is refused before it is counted.
-- Overrunning is punished, but a client that never asks for more than the
-- limit in one hits window is never blocked: one hit, L-1 just before the
-- window ends, L as soon as it has ended: 2L-1 within much less than a
-- window. Reads no clock: the counter's TTL is the window.
-- KEYS[1]: the hits counter; the block key is KEYS[1] .. ':block'
-- ARGV[1]: limit, hits per window; ARGV[2]: window, ms; ARGV[3]: block, ms
-- Reply: 1 allowed, 0 denied.
local block = KEYS[1] .. ':block'
if redis.call('EXISTS', block) == 1 then
  return 0
end
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if hits > tonumber(ARGV[1]) then
  redis.call('SET', block, '1', 'PX', ARGV[3])
  return 0
end
return 1
