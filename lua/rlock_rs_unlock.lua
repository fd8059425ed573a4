-- rlock, Redisson mode: release one hold of an RLock (RedissonLock.unlockInnerAsync,
-- Redisson 3.50.0 / 4.7.0, without its per-request unlock-latch key, which only guards
-- Redisson's own retries): a hold left renews the lease, the last one deletes the hash
-- and publishes UNLOCK_MESSAGE (0) on redisson_lock__channel:{name}.
-- KEYS[1] lock hash (the lock's name), KEYS[2] channel; ARGV[1] owner (uuid:thread),
-- ARGV[2] lease ms, ARGV[3] 'publish' or 'spublish' (Redisson's sharded pub/sub).
-- Returns -1 not held by this owner, 0 released, n > 0 holds left.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return n
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], '0')
return 0
