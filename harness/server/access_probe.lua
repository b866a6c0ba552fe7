-- access_probe.lua: CheckAccess's stand-in for the algorithms' scripts. It
-- calls every command they call (an ACL applies inside scripts too) on its
-- own probe keys, with redis.pcall so that a refusal is returned, not raised.
-- The one key it writes, KEYS[1], is born with its TTL (SET ... PX); the
-- commands that would make a ZSET or a HASH are sent to that STRING, where
-- Redis checks the ACL and then answers WRONGTYPE (a pass) without writing.
--
-- KEYS[1] a STRING, KEYS[2] a ZSET, KEYS[3] a HASH (one hash slot: "{p}")
-- ARGV    none
-- reply   {} when every call passed, else {command, error} of the first refused
local calls = {
  {'TIME'},
  {'GET', KEYS[1]},
  {'SET', KEYS[1], 0, 'PX', 60000},
  {'INCRBY', KEYS[1], 1},
  {'PEXPIRE', KEYS[1], 60000},
  {'ZADD', KEYS[1], 1, 'm'},
  {'ZCARD', KEYS[2]},
  {'ZRANGE', KEYS[2], 0, 0, 'WITHSCORES'},
  {'ZREMRANGEBYSCORE', KEYS[2], 0, 0},
  {'PEXPIRE', KEYS[2], 60000},
  {'HSET', KEYS[1], 'f', 1},
  {'HINCRBY', KEYS[1], 'f', 1},
  {'HGET', KEYS[3], 'f'},
  {'HMGET', KEYS[3], 'f'},
  {'HDEL', KEYS[3], 'f'},
  {'PEXPIRE', KEYS[3], 60000},
}
for _, c in ipairs(calls) do
  local r = redis.pcall(unpack(c))
  if type(r) == 'table' and r.err and string.sub(r.err, 1, 9) ~= 'WRONGTYPE' then
    return {c[1], r.err}
  end
end
return {}
