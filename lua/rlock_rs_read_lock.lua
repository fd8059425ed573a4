-- rlock, Redisson mode: read side of an RReadWriteLock (RedissonReadLock.tryLockInnerAsync):
-- hash `name`, 'mode' = read, field '<uuid>:<thread>' -> holds, and one key per hold,
-- '{name}:<uuid>:<thread>:rwlock_timeout:<n>', with that hold's lease, so the hash
-- lives as long as its longest hold. A read inside this owner's write is allowed.
-- KEYS[1] rw hash, KEYS[2] this owner's timeout prefix, KEYS[3] fence;
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] owner:write, ARGV[4] fence keep ms.
-- Returns {1, fence} when acquired, {0, pttl} while a writer holds it.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1)
    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, rlock_fence(KEYS[3], ARGV[4])}
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local key = KEYS[2] .. ':' .. ind
    redis.call('set', key, 1)
    redis.call('pexpire', key, ARGV[1])
    local left = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))
    return {1, rlock_fence(KEYS[3], ARGV[4])}
end
return {0, redis.call('pttl', KEYS[1])}
