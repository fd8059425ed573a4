-- rlock, Redisson mode: write side of an RReadWriteLock (RedissonWriteLock.tryLockInnerAsync):
-- hash `name`, field 'mode' = write, field '<uuid>:<thread>:write' -> holds. Reentrant;
-- a re-entry adds the lease to the time left, as Redisson's does. The fencing counter
-- is ours, beside Redisson's data.
-- KEYS[1] rw hash, KEYS[2] fence; ARGV[1] lease ms, ARGV[2] owner:write, ARGV[3] fence keep ms.
-- Returns {1, fence} when acquired, {0, pttl} while others hold it.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, rlock_fence(KEYS[2], ARGV[3])}
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local left = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], left + tonumber(ARGV[1]))
    return {1, rlock_fence(KEYS[2], ARGV[3])}
end
return {0, redis.call('pttl', KEYS[1])}
