-- The set-up of rate-from-hash.lua: stores the key's limit and window in
-- its hash (KEYS[2]). KEYS and ARGV as rate-from-hash.lua's.
redis.call('HSET', KEYS[2], 'limit', ARGV[3], 'window_us', ARGV[2])
return 1
