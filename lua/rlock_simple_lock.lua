-- rlock: simple lock. SET NX PX with a token unique to this acquisition; on success
-- take the lock's next fencing token (rlock_fence.lua) in the same atomic step, so tokens
-- follow grant order.
-- KEYS[1] lock, KEYS[2] fence counter; ARGV[1] token, ARGV[2] lease ms, ARGV[3] fence keep ms.
-- Returns {1, fence} when acquired, {0, pttl} when another holds it.
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return {1, rlock_fence(KEYS[2], ARGV[3])}
end
return {0, redis.call('pttl', KEYS[1])}
