-- A fixed window counted from the key's first hit, in the manner of the
-- published INCRBY + PEXPIRE middlewares, that re-arms the expiry on every
-- hit, accepted or not: the count restarts only after a window of silence.
-- Never more than L in any W; a client that keeps sending is locked out.
-- Reads no clock: its clock is the key's expiry.
-- KEYS[1]: the counter
-- ARGV: limit, window_ms, cost
-- Reply: {allowed (1/0), count, ttl_ms}
local limit, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local count = redis.call('INCRBY', KEYS[1], cost)
redis.call('PEXPIRE', KEYS[1], window)
if count > limit then
  return {0, count, window}
end
return {1, count, window}
