-- rlock: simple lock. SET NX PX with a token unique to this acquisition; on success
-- INCR the lock's fencing counter in the same atomic step, so tokens follow grant order.
-- KEYS[1] lock, KEYS[2] fence counter; ARGV[1] token, ARGV[2] lease ms.
-- Returns {1, fence} when acquired, {0, pttl} when another holds it.
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return {1, redis.call('incr', KEYS[2])}
end
return {0, redis.call('pttl', KEYS[1])}
