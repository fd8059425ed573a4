-- rlock, Redisson mode: release one write hold (RedissonWriteLock.unlockInnerAsync, without
-- the unlock-latch key): the last write hold deletes the hash and publishes
-- READ_UNLOCK_MESSAGE (1) on redisson_rwlock:{name}, or, when this owner still holds
-- reads taken inside the write, turns the mode back to read.
-- KEYS[1] rw hash, KEYS[2] channel; ARGV[1] owner:write, ARGV[2] lease ms, ARGV[3] publish command.
-- Returns -1 not held by this owner, 0 released, n > 0 holds left.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call(ARGV[3], KEYS[2], '1')
    return -1
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return n
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    redis.call(ARGV[3], KEYS[2], '1')
else
    redis.call('hset', KEYS[1], 'mode', 'read')
end
return 0
