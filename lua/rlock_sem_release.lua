-- rlock: semaphore release: give ARGV[1] permits back and wake waiters.
-- KEYS[1] permits counter; ARGV[1] n, ARGV[2] channel. Returns the permits now.
local v = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('publish', ARGV[2], v)
return v
