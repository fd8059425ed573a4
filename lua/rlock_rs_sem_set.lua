-- rlock, Redisson mode: RSemaphore.trySetPermits: set the permits when the semaphore does
-- not exist, and publish them on redisson_sc:{name}.
-- KEYS[1] permits, KEYS[2] channel; ARGV[1] permits, ARGV[2] publish command.
-- Returns 1 set, 0 it existed.
if redis.call('get', KEYS[1]) == false then
    redis.call('set', KEYS[1], ARGV[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
