-- BROKEN (denied requests change state): a sliding log that counts the
-- denials in a row of each key and, at the 1000th, drops the key's log
-- (a client denied that long is taken for a stuck log: "unstick" it). It
-- then accepts a whole limit more. Only a run of 1000 denials reaches it:
-- a thinned burst (256 denials, then probes) does not; sustained overload,
-- which is never thinned, does.
-- ARGV: now_us, window_us, limit, request_id
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local denied = KEYS[1] .. ':denied'
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
  if redis.call('INCR', denied) >= 1000 then
    redis.call('DEL', KEYS[1], denied)
  else
    redis.call('PEXPIRE', denied, math.ceil(window / 1000))
  end
  return 0
end
redis.call('DEL', denied)
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 1
