-- rlock: reentrant lock (Redisson RLock): a hash owner -> hold count. Free, or already
-- ours: count one more hold, set the lease, and take the next fencing token (rlock_fence.lua).
-- KEYS[1] lock hash, KEYS[2] fence counter; ARGV[1] owner (client id:thread), ARGV[2] lease ms,
-- ARGV[3] fence keep ms.
-- Returns {1, fence} when acquired, {0, pttl} when another owner holds it.
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[1], 1)
    redis.call('pexpire', KEYS[1], ARGV[2])
    return {1, rlock_fence(KEYS[2], ARGV[3])}
end
return {0, redis.call('pttl', KEYS[1])}
