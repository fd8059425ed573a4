-- rlock, Redisson mode: fenced lock (RedissonFencedLock.tryLockInnerAsync): the lock is
-- RLock's hash `name` (owner -> holds), and every acquisition, a re-entry too, INCRs
-- Redisson's token counter redisson_lock_token:{name} and hands its value to the caller,
-- so Java and C holders share one token sequence. The counter keeps Redisson's rule: no
-- TTL (a Java client would start again at 1 after an expiry).
-- KEYS[1] lock hash, KEYS[2] token counter; ARGV[1] lease ms, ARGV[2] owner (uuid:thread).
-- Returns {1, token} when acquired, {0, pttl} when another owner holds it.
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = redis.call('incr', KEYS[2])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, token}
end
return {0, redis.call('pttl', KEYS[1])}
