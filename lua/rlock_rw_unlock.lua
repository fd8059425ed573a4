-- rlock: release one hold of a read or write lock; when no holder is left the hash
-- goes and waiters wake. KEYS[1] rw hash, KEYS[2] reader deadlines zset;
-- ARGV[1] owner, ARGV[2] channel. Returns -1 not held by this owner, 0 released, n > 0 holds left.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return -1
end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then
    return n
end
redis.call('hdel', KEYS[1], ARGV[1])
redis.call('zrem', KEYS[2], ARGV[1])
if redis.call('hlen', KEYS[1]) <= 1 then
    redis.call('del', KEYS[1], KEYS[2])
end
-- a reader leaving can let a writer in even when other readers remain queued behind it
redis.call('publish', ARGV[2], '0')
return 0
