-- BROKEN (cautious): a fixed window that starts at the key's first hit,
-- with a penalty: a request over the limit blocks the key for a whole
-- window (like a login throttle's "block duration"). Every burst that
-- overruns is punished, but a client that never overruns sends L in the
-- first window, the last of them just before it ends, and L more just
-- after it: 2L-1 within one window.
-- ARGV: now_us, window_us, limit
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local st = redis.call('HMGET', KEYS[1], 'start', 'n', 'blocked_until')
local start, n = tonumber(st[1]), tonumber(st[2] or '0')
local blocked_until = tonumber(st[3] or '0')
if now < blocked_until then return 0 end
if not start or now >= start + window then
  start, n = now, 0
end
if n >= limit then
  -- the overrun: no request on this key for a window from now
  redis.call('HSET', KEYS[1], 'blocked_until', string.format('%d', now + window))
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return 0
end
redis.call('HSET', KEYS[1], 'start', string.format('%d', start), 'n', n + 1)
redis.call('PEXPIRE', KEYS[1], math.ceil((start + window - now) / 1000))
return 1
