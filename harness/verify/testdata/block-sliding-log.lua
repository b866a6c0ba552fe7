-- CORRECTED twin of first-hit-block.lua: the same block key, the hits kept
-- as a log of the instants Redis TIME gives (a sorted set trimmed to the
-- trailing window), so at most the limit is accepted in any window; the
-- block only refuses more.
-- KEYS[1]: the log; the block key is KEYS[1] .. ':block'
-- ARGV[1]: limit, hits per window; ARGV[2]: window, ms; ARGV[3]: block, ms;
-- ARGV[4]: a request id, unique per request (the log's member)
-- Reply: 1 allowed, 0 denied.
local block = KEYS[1] .. ':block'
if redis.call('EXISTS', block) == 1 then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window * 1000)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  redis.call('SET', block, '1', 'PX', ARGV[3])
  return 0
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return 1
