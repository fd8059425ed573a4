-- rlock, Redisson mode: RSemaphore.release: give ARGV[1] permits back and publish the
-- permits now on redisson_sc:{name}.
-- KEYS[1] permits (the semaphore's name), KEYS[2] channel; ARGV[1] n, ARGV[2] publish command.
-- Returns the permits now.
local v = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], v)
return v
