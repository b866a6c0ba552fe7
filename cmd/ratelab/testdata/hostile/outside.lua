-- a script that writes outside its keys: the guard answers NOPERM
redis.call('SET', 'not-mine', 1)
return 1
