-- rlock, Redisson mode: fair lock (RedissonFairLock.tryLockInnerAsync, its EVAL_LONG form,
-- Redisson 3.50.0 / 4.7.0): lock hash `name`, waiters in the list
-- redisson_lock_queue:{name}, each with a deadline in the zset redisson_lock_timeout:{name}
-- set once when it queues: the time left of the one before it (or of the lock) + its wait
-- + now. Stale waiters at the head are dropped; the head (or anyone, when nobody waits)
-- takes a free lock and the deadlines behind it move up by its wait. Client clocks, as
-- Redisson's (milliseconds since the epoch). The fencing counter is ours.
-- KEYS[1] lock hash, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] fence;
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] wait ms, ARGV[4] now ms, ARGV[5] fence keep ms.
-- Returns {1, fence} when acquired, {0, ms to wait} while queued.
while true do
    local first = redis.call('lindex', KEYS[2], 0)
    if first == false then
        break
    end
    local t = redis.call('zscore', KEYS[3], first)
    if t ~= false and tonumber(t) <= tonumber(ARGV[4]) then
        redis.call('zrem', KEYS[3], first)
        redis.call('lpop', KEYS[2])
    else
        break
    end
end
if redis.call('exists', KEYS[1]) == 0 and
    (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], ARGV[2])
    local keys = redis.call('zrange', KEYS[3], 0, -1)
    for i = 1, #keys, 1 do
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i])
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, rlock_fence(KEYS[4], ARGV[5])}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, rlock_fence(KEYS[4], ARGV[5])}
end
if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
    return {0, math.max(0, redis.call('pttl', KEYS[1]))}
end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) ~= false then
    ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4])
else
    ttl = redis.call('pttl', KEYS[1])
end
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4])
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return {0, ttl}
