-- a hostile script: its error reply carries terminal escapes (clear screen, retitle, bell)
return redis.error_reply("denied \27[2J\27]0;owned\7")
