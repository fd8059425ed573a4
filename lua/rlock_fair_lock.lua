-- rlock: fair lock (Redisson RedissonFairLock semantics): reentrant, granted in request
-- order. Waiters queue in a list; each has a deadline in a zset that it refreshes every
-- time it asks again, so a waiter that died (or stopped asking) is dropped after
-- ARGV[3] ms and no longer blocks the queue. Time is the server's (one clock for all).
-- KEYS[1] lock hash, KEYS[2] queue list, KEYS[3] waiter deadlines zset, KEYS[4] fence;
-- ARGV[1] owner, ARGV[2] lease ms, ARGV[3] waiter timeout ms, ARGV[4] fence keep ms.
-- Returns {1, fence} when acquired, {0, pttl} while waiting (queued).
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stale = redis.call('zrangebyscore', KEYS[3], '-inf', now)
for _, w in ipairs(stale) do
    redis.call('lrem', KEYS[2], 0, w)
    redis.call('zrem', KEYS[3], w)
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[1], 1)
    redis.call('pexpire', KEYS[1], ARGV[2])
    return {1, rlock_fence(KEYS[4], ARGV[4])}
end
local head = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and (not head or head == ARGV[1]) then
    if head then
        redis.call('lpop', KEYS[2])
        redis.call('zrem', KEYS[3], ARGV[1])
    end
    redis.call('hset', KEYS[1], ARGV[1], 1)
    redis.call('pexpire', KEYS[1], ARGV[2])
    return {1, rlock_fence(KEYS[4], ARGV[4])}
end
if not redis.call('zscore', KEYS[3], ARGV[1]) then
    redis.call('rpush', KEYS[2], ARGV[1])
end
redis.call('zadd', KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
-- the queue outlives no waiter by much: every live waiter refreshes it
redis.call('pexpire', KEYS[2], 2 * tonumber(ARGV[3]))
redis.call('pexpire', KEYS[3], 2 * tonumber(ARGV[3]))
return {0, redis.call('pttl', KEYS[1])}
